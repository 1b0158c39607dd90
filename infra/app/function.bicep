// The API: a Linux function app on the Flex Consumption plan (FC1) that runs the binary as a
// custom handler (functionAppConfig.runtime `custom` 1.0), with its user-assigned identity for
// everything it reaches, and App Service Authentication (Easy Auth) with Microsoft Entra ID.
//
// Flex Consumption takes the runtime, scale and package location from functionAppConfig, so
// the app settings FUNCTIONS_WORKER_RUNTIME, FUNCTIONS_EXTENSION_VERSION and
// WEBSITE_RUN_FROM_PACKAGE must not be set (the binary recognises the host without them).

param name string
param planName string
param location string
param tags object

@description('Resource id of the user-assigned identity the app runs with.')
param identityId string
@description('Client id of that identity: identity-based connections name it with __clientId.')
param identityClientId string

param storageAccountName string
param deploymentContainerName string
@description('Blob container of the images\' bytes in that account.')
param imagesContainerName string
param applicationInsightsName string
param cosmosEndpoint string
param databaseName string

@minValue(40)
@maxValue(1000)
param maximumInstanceCount int
@allowed([ 512, 2048, 4096 ])
param instanceMemoryMB int

@description('Application (client) id of the API\'s Microsoft Entra ID app registration.')
param apiClientId string
@description('Token audiences Easy Auth accepts (the Application ID URI and the client id).')
param apiAudiences array
@description('OpenID Connect issuer of the tokens: this tenant\'s v2.0 issuer (the app registration asks for v2 access tokens).')
param tokenIssuer string = '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
@secure()
//checkov:skip=CKV_AZURE_131: the default is newGuid(), drawn afresh at each deployment; nothing is hard-coded
@description('Key the pages\' form tokens are signed with, shared by every instance (a form served by one instance is posted to another). A new one each deployment unless given: forms open across a deployment are refused once.')
param csrfKey string = newGuid()

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  //checkov:skip=CKV_AZURE_225: Flex Consumption offers zone redundancy in some regions only; opt in on the plan where the region has it
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: { reserved: true } // Linux
}

var appSettings = [
  // The host's own storage, reached with the identity: no connection string, no key.
  { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
  { name: 'AzureWebJobsStorage__clientId', value: identityClientId }
  { name: 'AzureWebJobsStorage__blobServiceUri', value: storage.properties.primaryEndpoints.blob }
  { name: 'AzureWebJobsStorage__queueServiceUri', value: storage.properties.primaryEndpoints.queue }
  { name: 'AzureWebJobsStorage__tableServiceUri', value: storage.properties.primaryEndpoints.table }
  // Telemetry (the host's, and the binary's OpenTelemetry export), sent with the identity:
  // Application Insights refuses local (key) authentication.
  { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: applicationInsights.properties.ConnectionString }
  { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${identityClientId};Authorization=AAD' }
  // Cosmos DB with the identity, read by the binary and by the change-feed triggers' bindings.
  { name: 'CosmosDBConnection__accountEndpoint', value: cosmosEndpoint }
  { name: 'CosmosDBConnection__credential', value: 'managedidentity' }
  { name: 'CosmosDBConnection__clientId', value: identityClientId }
  { name: 'COSMOS_DATABASE', value: databaseName }
  // The images' bytes in Blob Storage, reached with the same identity (CosmosDBConnection__clientId
  // names it): a data role on the container, no key.
  { name: 'BLOG_IMAGES_ENDPOINT', value: storage.properties.primaryEndpoints.blob }
  { name: 'BLOG_IMAGES_CONTAINER', value: imagesContainerName }
  { name: 'RUST_LOG', value: 'info' }
  // Trust the principal header only while App Service Authentication is on (it is, below).
  { name: 'BLOG_AUTH', value: 'easyauth' }
  // The front page is a function at the site's root: the host's own home page must not answer there.
  { name: 'AzureWebJobsDisableHomepage', value: 'true' }
  // One signing key for the form tokens and the continuation tokens on every instance the plan
  // scales out to.
  { name: 'BLOG_CSRF_KEY', value: csrfKey }
]

resource app 'Microsoft.Web/sites@2024-04-01' = {
  //checkov:skip=CKV_AZURE_78: Flex Consumption has no FTP endpoint and rejects siteConfig.ftpsState; FTP basic auth is disabled by the ftp basicPublishingCredentialsPolicies below
  //checkov:skip=CKV_AZURE_222: a public API: callers reach it over the internet, Easy Auth checks their tokens
  //checkov:skip=CKV_AZURE_17: callers authenticate with Microsoft Entra ID bearer tokens, not client certificates
  //checkov:skip=CKV_AZURE_212: Flex Consumption scales from zero on demand; always-ready instances would bill while idle
  //checkov:skip=CKV_AZURE_213: health check takes unhealthy instances out of a fixed pool; a Flex Consumption app scales from zero per request
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    publicNetworkAccess: 'Enabled'
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'custom'
        version: '1.0'
      }
    }
    // No ftpsState: Flex Consumption has no FTP endpoint and rejects that property (ARM error
    // 51021); basic-auth FTP and SCM publishing are turned off below instead.
    siteConfig: {
      minTlsVersion: '1.2'
      http20Enabled: true
      appSettings: appSettings
    }
  }
}

// Basic-auth publishing credentials off: deployments use Microsoft Entra ID tokens only.
resource ftpPublishing 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: app
  name: 'ftp'
  properties: { allow: false }
}

resource scmPublishing 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: app
  name: 'scm'
  properties: { allow: false }
}

// App Service Authentication with Microsoft Entra ID. It validates bearer tokens, sets
// x-ms-client-principal-id (the caller's object id) and strips client copies of it; the app
// trusts the header in `easyauth` mode only while this is on. Anonymous requests pass, so
// queries stay public and commands without a signed-in caller get 401 from the app. No client
// secret: the app is an API, it runs no browser sign-in.
resource authSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  //checkov:skip=CKV_AZURE_13: the check reads the legacy authsettings `enabled`; authsettingsV2 turns Easy Auth on with platform.enabled (CKV_AZURE_56 passes)
  //checkov:skip=CKV_AZURE_63: not the site's web config: HTTP logs of a function app go to Application Insights
  //checkov:skip=CKV_AZURE_65: not the site's web config: detailed error pages are for IIS sites
  //checkov:skip=CKV_AZURE_66: not the site's web config: failed request tracing is an IIS feature
  //checkov:skip=CKV_AZURE_80: not the site's web config: the app runs no .NET Framework
  //checkov:skip=CKV_AZURE_88: not the site's web config: the app keeps no files (Azure Files mounts are for stateful sites)
  //checkov:skip=CKV_AZURE_222: not the site's web config: public network access is a site property (a public API)
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
          clientId: apiClientId
          openIdIssuer: tokenIssuer
        }
        validation: { allowedAudiences: apiAudiences }
      }
    }
    login: { tokenStore: { enabled: false } }
  }
}

output name string = app.name
output defaultHostName string = app.properties.defaultHostName
