// The function app's storage: the host's own state (AzureWebJobsStorage) and the Flex
// Consumption deployment container. Keys are refused (allowSharedKeyAccess: false); the app's
// identity reaches it with data roles (rbac.bicep).

param name string
param location string
param tags object

@description('Blob container the Flex Consumption plan deploys the package from.')
param deploymentContainerName string = 'app-package'

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  //checkov:skip=CKV_AZURE_35: Flex Consumption without virtual network integration reaches its storage over the public endpoint; keys are off, identities only
  //checkov:skip=CKV_AZURE_59: as above: private networking would need VNet integration and private endpoints, not part of this public serverless template
  //checkov:skip=CKV_AZURE_206: locally redundant is enough: it holds the deployed package and the host's own state, both recreated by a redeploy
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

output name string = storage.name
output deploymentContainerName string = deploymentContainer.name
