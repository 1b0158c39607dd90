// The function app's user-assigned identity. It exists before the app, so its roles are granted
// before the host first starts (a system-assigned identity would only exist with the app).

param name string
param location string
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
