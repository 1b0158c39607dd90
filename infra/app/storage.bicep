// The function app's storage: the host's own state (AzureWebJobsStorage), the Flex
// Consumption deployment container, and the images of posts (their bytes, one blob each, in
// the `images` container: BLOG_IMAGES_ENDPOINT). Keys are refused (allowSharedKeyAccess:
// false); the app's identity reaches it with data roles (rbac.bicep).

param name string
param location string
param tags object

@description('Blob container the Flex Consumption plan deploys the package from.')
param deploymentContainerName string = 'app-package'

@description('Blob container of the images\' bytes (BLOG_IMAGES_CONTAINER). Private: the app serves them under its own origin.')
param imagesContainerName string = 'images'

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  //checkov:skip=CKV_AZURE_35: Flex Consumption without virtual network integration reaches its storage over the public endpoint; keys are off, identities only
  //checkov:skip=CKV_AZURE_59: as above: private networking would need VNet integration and private endpoints, not part of this public serverless template
  //checkov:skip=CKV_AZURE_206: locally redundant (three copies in one datacenter): the package and the host's state are recreated by a redeploy; the images are user data, and an existing account's redundancy cannot change in place (docs/images.md says how to choose another)
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

// Created here, not by the app: the app's identity may read and write blobs, not containers.
resource imagesContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: imagesContainerName
  properties: { publicAccess: 'None' }
}

output name string = storage.name
output deploymentContainerName string = deploymentContainer.name
output imagesContainerName string = imagesContainer.name
output blobEndpoint string = storage.properties.primaryEndpoints.blob
