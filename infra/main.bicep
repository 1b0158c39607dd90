// cosmos-blog on Azure: the azd template's entry point (`azd up`, or `az deployment sub create`).
//
// One resource group holds a serverless Cosmos DB account with every container, a function app
// on the Flex Consumption plan (FC1) that runs the binary as a custom handler, its storage
// account, Log Analytics with Application Insights, and a user-assigned identity. No keys
// anywhere: the app reaches storage, Cosmos DB and Application Insights with that identity,
// the storage account and Cosmos DB refuse keys, and App Service Authentication (Easy Auth,
// Microsoft Entra ID) validates callers' tokens. The API's app registration is created here
// too (Microsoft Graph Bicep extension) unless `apiClientId` names an existing one.
//
// The code is not deployed by this template: azd's `postdeploy` hook (infra/hooks/) stages the
// package of the same layout (`cosmos-blog stage --zip --tenancy`) and uploads it.

targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; resource names derive a unique token from it.')
param environmentName string

// Regions that offer the Flex Consumption plan (`az functionapp list-flexconsumption-locations`).
@minLength(1)
@description('Region of every resource.')
@allowed([
  'australiaeast'
  'brazilsouth'
  'canadacentral'
  'centralus'
  'eastasia'
  'eastus'
  'eastus2'
  'francecentral'
  'germanywestcentral'
  'italynorth'
  'japaneast'
  'koreacentral'
  'northcentralus'
  'northeurope'
  'norwayeast'
  'southafricanorth'
  'southcentralus'
  'southeastasia'
  'southindia'
  'spaincentral'
  'swedencentral'
  'uaenorth'
  'uksouth'
  'westeurope'
  'westus'
  'westus2'
  'westus3'
])
@metadata({ azd: { type: 'location' } })
param location string

@description('Object id of the deploying user (azd sets AZURE_PRINCIPAL_ID): it gets the Cosmos DB data role too, so that `cosmos-blog verify` and `rebuild` run from a laptop. Empty: nobody but the app.')
param principalId string = ''

@description('Data layout: single (one blog) or multi (many blogs on hierarchical partition keys). Fixed once the containers exist; the package must be staged with the same --tenancy (the azd hook does).')
@allowed([ 'single', 'multi' ])
param tenancy string = 'single'

@description('Cosmos DB database name (the app setting COSMOS_DATABASE).')
param databaseName string = 'blog'

@description('Application (client) id of an existing Microsoft Entra ID app registration for the API. Empty: the template creates one (needs the right to register applications in the tenant).')
param apiClientId string = ''

@description('Flex Consumption: the most instances the app scales out to.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Flex Consumption: memory of each instance (MB); the billed GB-seconds scale with it.')
@allowed([ 512, 2048, 4096 ])
param instanceMemoryMB int = 2048

var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }

resource rg 'Microsoft.Resources/resourceGroups@2024-11-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module identity 'app/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: 'id-api-${resourceToken}'
    location: location
    tags: tags
  }
}

module monitoring 'app/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: 'log-${resourceToken}'
    applicationInsightsName: 'appi-${resourceToken}'
    location: location
    tags: tags
  }
}

// The operator's workbook: requests, failures, RU per operation, 429s, change-feed lag.
module dashboard 'app/dashboard.bicep' = {
  name: 'dashboard'
  scope: rg
  params: {
    location: location
    appName: 'func-blog-${resourceToken}'
    insightsId: monitoring.outputs.applicationInsightsId
  }
}

module storage 'app/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: 'st${resourceToken}'
    location: location
    tags: tags
  }
}

module cosmos 'app/cosmos.bicep' = {
  name: 'cosmos'
  scope: rg
  params: {
    name: 'cosmos-${resourceToken}'
    location: location
    tags: tags
    databaseName: databaseName
    tenancy: tenancy
  }
}

module rbac 'app/rbac.bicep' = {
  name: 'rbac'
  scope: rg
  params: {
    appPrincipalId: identity.outputs.principalId
    userPrincipalId: principalId
    storageAccountName: storage.outputs.name
    imagesContainerName: storage.outputs.imagesContainerName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    cosmosAccountName: cosmos.outputs.name
  }
}

// The only file that uses the Microsoft Graph extension (checkov's parser cannot read it).
module entraApi 'app/entra-api.bicep' = if (empty(apiClientId)) {
  name: 'entra-api'
  scope: rg
  params: {
    uniqueName: 'cosmos-blog-api-${resourceToken}'
    displayName: 'cosmos-blog API (${environmentName})'
    siteHostName: 'func-blog-${resourceToken}.azurewebsites.net'
  }
}

var resolvedClientId = empty(apiClientId) ? entraApi!.outputs.clientId : apiClientId
var resolvedIdentifierUri = empty(apiClientId) ? entraApi!.outputs.identifierUri : 'api://${apiClientId}'

module api 'app/function.bicep' = {
  name: 'api'
  scope: rg
  // The roles exist before the host first starts and reaches storage with them.
  dependsOn: [ rbac ]
  params: {
    name: 'func-blog-${resourceToken}'
    planName: 'plan-${resourceToken}'
    location: location
    tags: tags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerName: storage.outputs.deploymentContainerName
    imagesContainerName: storage.outputs.imagesContainerName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    cosmosEndpoint: cosmos.outputs.endpoint
    databaseName: databaseName
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    apiClientId: resolvedClientId
    apiAudiences: [ resolvedIdentifierUri, resolvedClientId ]
  }
}

// azd saves these in the environment (`azd env get-values`); the deploy hook reads them.
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = api.outputs.name
output API_BASE_URL string = 'https://${api.outputs.defaultHostName}/api'
output API_CLIENT_ID string = resolvedClientId
output API_IDENTIFIER_URI string = resolvedIdentifierUri
// The layout the containers were created for: the hook refuses to stage another one.
output BLOG_PROVISIONED_TENANCY string = tenancy
// Named as the binary's settings, so that `cosmos-blog verify` runs with the environment's values.
output CosmosDBConnection__accountEndpoint string = cosmos.outputs.endpoint
output COSMOS_DATABASE string = databaseName
// The images' bytes (for `verify --images-endpoint` from your machine).
output BLOG_IMAGES_ENDPOINT string = storage.outputs.blobEndpoint
