// Every role the deployment grants: data roles only, no keys.
// - the app's identity: Storage Blob Data Owner, Queue and Table Data Contributor on its
//   storage (the host's state, the deployment container), Monitoring Metrics Publisher on
//   Application Insights, and the Cosmos DB Built-in Data Contributor (data plane);
// - the deploying user, when given: the same Cosmos DB data role, for `verify` and `rebuild`.

param appPrincipalId string
@description('Object id of the deploying user or principal; empty: none.')
param userPrincipalId string = ''
param storageAccountName string
param applicationInsightsName string
param cosmosAccountName string

var storageRoles = [
  'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
]
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb'
var cosmosDataContributor = '00000000-0000-0000-0000-000000000002' // built-in, per account

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
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
