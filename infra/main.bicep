// Azure resources for cosmos-blog: a Cosmos DB account with the V3 containers, and a Linux
// function app (custom handler) that reaches it with its managed identity.
//
//   az group create -n <rg> -l <region>
//   az deployment group create -g <rg> -f infra/main.bicep -p appName=<unique-name> \
//     entraClientId=<application (client) id of the API's app registration>
//   cargo run --release -- stage --zip
//   az functionapp deployment source config-zip -g <rg> -n <unique-name> --src .staging/app.zip
//
// The containers are created here because the app's data-plane role cannot create them.
// App Service Authentication (Easy Auth) is turned on with Microsoft Entra ID: it validates
// callers' tokens and strips client copies of x-ms-client-principal-id, the header the app
// trusts in its `easyauth` mode. Anonymous requests pass through, so queries stay public and
// commands without a signed-in caller get 401 from the app.

@description('Base name for every resource; must be globally unique for the function app and accounts.')
param appName string

param location string = resourceGroup().location

@description('Cosmos DB database name (the app setting COSMOS_DATABASE).')
param databaseName string = 'blog'

@description('Data layout: single (one blog) or multi (many blogs on hierarchical partition keys). Fixed once the containers exist. The package decides the routes: stage it with the same --tenancy (its host.json passes the flag to the binary).')
@allowed([ 'single', 'multi' ])
param tenancy string = 'single'

@description('Application (client) ID of the Microsoft Entra ID app registration that callers get tokens for.')
param entraClientId string

@description('OpenID Connect issuer of those tokens; by default this tenant\'s v2.0 issuer.')
param entraIssuer string = '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'

var storageName = toLower(take(replace('${appName}st', '-', ''), 24))

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-05-15' = {
  name: '${appName}-cosmos'
  location: location
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
    locations: [ { locationName: location, failoverPriority: 0 } ]
    capabilities: [ { name: 'EnableServerless' } ]
    disableLocalAuth: true
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-05-15' = {
  parent: cosmos
  name: databaseName
  properties: { resource: { id: databaseName } }
}

// Titles and contents are never filtered on: leave them out of the index (cheaper writes).
var indexingPolicy = {
  indexingMode: 'consistent'
  includedPaths: [ { path: '/*' } ]
  excludedPaths: [ { path: '/title/?' }, { path: '/content/?' }, { path: '/"_etag"/?' } ]
  compositeIndexes: [
    [ { path: '/type', order: 'ascending' }, { path: '/creationDate', order: 'descending' } ]
    [ { path: '/type', order: 'ascending' }, { path: '/creationDate', order: 'ascending' } ]
  ]
}

// The partition keys of each layout (BLOG_TENANCY); they cannot change once a container exists.
var multiTenant = tenancy == 'multi'
var containers = [
  { name: 'users', paths: multiTenant ? [ '/tenantId', '/userId' ] : [ '/userId' ] }
  { name: 'posts', paths: multiTenant ? [ '/tenantId', '/postId' ] : [ '/postId' ] }
  { name: 'feed', paths: multiTenant ? [ '/tenantId', '/type' ] : [ '/type' ] }
  { name: 'leases', paths: [ '/id' ] }
]

resource sqlContainers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-05-15' = [for c in containers: {
  parent: database
  name: c.name
  properties: {
    // Time-to-live on, without a default (-1), in the blog's containers: only tombstones of
    // deleted posts and accounts carry a `ttl`, and the service purges them after it.
    resource: union({
      id: c.name
      // Hierarchical keys are MultiHash, version 2.
      partitionKey: length(c.paths) > 1 ? { paths: c.paths, kind: 'MultiHash', version: 2 } : { paths: c.paths, kind: 'Hash' }
      indexingPolicy: c.name == 'leases' ? { indexingMode: 'consistent' } : indexingPolicy
    }, c.name == 'leases' ? {} : { defaultTtl: -1 })
  }
}]

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: storageName
  location: location
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: { minimumTlsVersion: 'TLS1_2', allowBlobPublicAccess: false }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: '${appName}-insights'
  location: location
  kind: 'web'
  properties: { Application_Type: 'web' }
}

resource plan 'Microsoft.Web/serverfarms@2023-12-01' = {
  name: '${appName}-plan'
  location: location
  kind: 'functionapp'
  sku: { name: 'Y1', tier: 'Dynamic' }
  properties: { reserved: true } // Linux
}

resource app 'Microsoft.Web/sites@2023-12-01' = {
  name: appName
  location: location
  kind: 'functionapp,linux'
  identity: { type: 'SystemAssigned' }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      linuxFxVersion: ''
      appSettings: [
        { name: 'FUNCTIONS_EXTENSION_VERSION', value: '~4' }
        { name: 'FUNCTIONS_WORKER_RUNTIME', value: 'custom' }
        { name: 'AzureWebJobsStorage', value: 'DefaultEndpointsProtocol=https;AccountName=${storage.name};EndpointSuffix=${environment().suffixes.storage};AccountKey=${storage.listKeys().keys[0].value}' }
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'CosmosDBConnection__accountEndpoint', value: cosmos.properties.documentEndpoint }
        { name: 'COSMOS_DATABASE', value: databaseName }
        { name: 'RUST_LOG', value: 'info' }
        // Trust the principal header only while App Service Authentication is on (it is, below).
        { name: 'BLOG_AUTH', value: 'easyauth' }
      ]
    }
  }
}

// App Service Authentication with Microsoft Entra ID. No client secret: the app is an API that
// validates bearer tokens; it runs no browser sign-in flow.
resource authSettings 'Microsoft.Web/sites/config@2023-12-01' = {
  parent: app
  name: 'authsettingsV2'
  properties: {
    platform: { enabled: true }
    globalValidation: {
      requireAuthentication: false
      unauthenticatedClientAction: 'AllowAnonymous'
    }
    httpSettings: { requireHttps: true }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: entraClientId
          openIdIssuer: entraIssuer
        }
        // The client id is always an allowed audience; v1 tokens carry the Application ID URI.
        validation: { allowedAudiences: [ 'api://${entraClientId}' ] }
      }
    }
    login: { tokenStore: { enabled: false } }
  }
}

// "Cosmos DB Built-in Data Contributor": read and write items, and the change feed's leases.
resource dataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-05-15' = {
  parent: cosmos
  name: guid(cosmos.id, app.id, 'data-contributor')
  properties: {
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'
    principalId: app.identity.principalId
    scope: cosmos.id
  }
}

output functionAppName string = app.name
output cosmosEndpoint string = cosmos.properties.documentEndpoint
