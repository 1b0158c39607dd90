// The API's Microsoft Entra ID app registration, with the Microsoft Graph Bicep extension.
// Kept alone in this small file: checkov's Bicep parser (pycep) cannot read `extension`.
//
// It exposes one delegated scope, asks for v2 access tokens (audience: the client id, issuer:
// the tenant's v2.0 endpoint, as function.bicep's Easy Auth expects), and pre-authorizes the
// Azure CLI and azd (one client id) for that scope, so that
// `az account get-access-token --resource <identifierUri>` works without a consent prompt.
// It also lets people sign in to the pages through App Service Authentication (its callback
// is a redirect URI).
// `azd down` does not delete it: `az ad app delete --id <clientId>`.

extension microsoftGraphV1

@description('Tenant-unique, immutable name of the registration (idempotent redeployments).')
param uniqueName string
param displayName string
@description('The function app\'s host name: App Service Authentication\'s sign-in returns there.')
param siteHostName string

// Azure CLI's public client id, which azd uses too.
var azureCliClientId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'
var scopeId = guid(uniqueName, 'user_impersonation')
// api://<tenant id>/<name>: allowed by the tenant-wide identifier URI restrictions, and known
// before the app id exists.
var identifierUri = 'api://${tenant().tenantId}/${uniqueName}'

resource api 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
  signInAudience: 'AzureADMyOrg'
  identifierUris: [ identifierUri ]
  owners: { relationships: [ deployer().objectId ] }
  // The pages' "Sign in" goes through App Service Authentication's login, which comes back to
  // its callback with an ID token (no client secret to keep).
  web: {
    redirectUris: [ 'https://${siteHostName}/.auth/login/aad/callback' ]
    implicitGrantSettings: { enableIdTokenIssuance: true }
  }
  api: {
    requestedAccessTokenVersion: 2
    oauth2PermissionScopes: [
      {
        id: scopeId
        type: 'User'
        value: 'user_impersonation'
        isEnabled: true
        adminConsentDisplayName: 'Use cosmos-blog as the signed-in user'
        adminConsentDescription: 'Lets the application call the cosmos-blog API as the signed-in user.'
        userConsentDisplayName: 'Use cosmos-blog as you'
        userConsentDescription: 'Lets the application call the cosmos-blog API as you.'
      }
    ]
    preAuthorizedApplications: [
      {
        appId: azureCliClientId
        delegatedPermissionIds: [ scopeId ]
      }
    ]
  }
}

// Tokens are only issued for an app that has a service principal in the tenant.
resource apiServicePrincipal 'Microsoft.Graph/servicePrincipals@v1.0' = {
  appId: api.appId
}

output clientId string = api.appId
output identifierUri string = identifierUri
