// Every role the deployment grants: data roles only, no keys.
// - the app's identity: Storage Blob Data Owner, Queue and Table Data Contributor on its
//   storage (the host's state, the deployment container), Monitoring Metrics Publisher on
//   Application Insights, and the Cosmos DB Built-in Data Contributor (data plane); Storage
//   Blob Data Contributor on the images' container, the one role the images' bytes need (so
//   it stays enough if the account-wide roles above are narrowed to the host's own containers);
// - the deploying user, when given: the same Cosmos DB data role and the images' Storage Blob
//   Data Contributor, for `verify` and `rebuild`.

param appPrincipalId string
@description('Object id of the deploying user or principal; empty: none.')
param userPrincipalId string = ''
param storageAccountName string
@description('Blob container of the images\' bytes, in that account.')
param imagesContainerName string
param applicationInsightsName string
param cosmosAccountName string

var storageRoles = [
  'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
]
var storageBlobDataContributor = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb'
var cosmosDataContributor = '00000000-0000-0000-0000-000000000002' // built-in, per account

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource imagesContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: imagesContainerName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' existing = {
  name: cosmosAccountName
}

resource storageRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for role in storageRoles: {
  name: guid(storage.id, appPrincipalId, role)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}]

// Read, write, delete and list the images' blobs: a data-plane role, no key.
resource imagesContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(imagesContainer.id, appPrincipalId, storageBlobDataContributor)
  scope: imagesContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributor)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// The deploying user too, so that `verify` (and `verify --repair`) reach the images from
// their machine, as they reach Cosmos DB.
resource userImagesContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(userPrincipalId)) {
  name: guid(imagesContainer.id, userPrincipalId, storageBlobDataContributor)
  scope: imagesContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataContributor)
    principalId: userPrincipalId
  }
}

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, appPrincipalId, monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisher)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Cosmos DB data-plane roles are the account's own sqlRoleAssignments, not Azure RBAC.
resource appDataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = {
  parent: cosmos
  name: guid(cosmos.id, appPrincipalId, cosmosDataContributor)
  properties: {
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributor}'
    principalId: appPrincipalId
    scope: cosmos.id
  }
}

resource userDataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = if (!empty(userPrincipalId)) {
  parent: cosmos
  // One role assignment at a time on an account.
  dependsOn: [ appDataContributor ]
  name: guid(cosmos.id, userPrincipalId, cosmosDataContributor)
  properties: {
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributor}'
    principalId: userPrincipalId
    scope: cosmos.id
  }
}
