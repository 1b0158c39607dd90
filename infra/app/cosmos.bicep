// A serverless Cosmos DB account with the database and every container the app uses, `leases`
// included: the app's data-plane role cannot create containers. Keys are off for data
// (disableLocalAuth) and for metadata writes (disableKeyBasedMetadataWriteAccess); the app and
// the deploying user get the data role in rbac.bicep.

param name string
param location string
param tags object
param databaseName string

@description('Data layout (BLOG_TENANCY): multi puts the tenant id first in every hierarchical (MultiHash) key. Fixed once a container exists.')
@allowed([ 'single', 'multi' ])
param tenancy string

resource account 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  //checkov:skip=CKV_AZURE_101: Flex Consumption without virtual network integration reaches Cosmos DB over the public endpoint; keys are off, Entra ID only
  //checkov:skip=CKV_AZURE_99: as above: no IP or virtual network filter fits a serverless app with no fixed outbound address
  name: name
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
    locations: [ { locationName: location, failoverPriority: 0, isZoneRedundant: false } ]
    capabilities: [ { name: 'EnableServerless' } ]
    minimalTlsVersion: 'Tls12'
    disableLocalAuth: true
    disableKeyBasedMetadataWriteAccess: true
    publicNetworkAccess: 'Enabled'
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-11-15' = {
  parent: account
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
    // The views (tags, archive) list a partition's posts newest first by publication.
    [ { path: '/type', order: 'ascending' }, { path: '/publishedDate', order: 'descending' } ]
  ]
}

// The partition keys of each layout; they cannot change once a container exists.
var multiTenant = tenancy == 'multi'
var containers = [
  { name: 'users', paths: multiTenant ? [ '/tenantId', '/userId' ] : [ '/userId' ] }
  { name: 'posts', paths: multiTenant ? [ '/tenantId', '/postId' ] : [ '/postId' ] }
  { name: 'feed', paths: multiTenant ? [ '/tenantId', '/type' ] : [ '/type' ] }
  // The views the change feed keeps: a tag's posts (Q8), a month's posts and counts (Q9).
  { name: 'tags', paths: multiTenant ? [ '/tenantId', '/tag' ] : [ '/tag' ] }
  { name: 'archive', paths: multiTenant ? [ '/tenantId', '/month' ] : [ '/month' ] }
  { name: 'leases', paths: [ '/id' ] }
]

resource sqlContainers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15' = [for c in containers: {
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

output name string = account.name
output endpoint string = account.properties.documentEndpoint
