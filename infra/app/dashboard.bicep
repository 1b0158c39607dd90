// The operator's dashboard: an Azure Monitor workbook on the app's Application Insights, with
// the queries of docs/observing.md (requests, failures, RU per
// operation, throttling, change-feed lag). `main.bicep` deploys it beside the component; a
// module of its own, so that another template that creates the component can add it too.

@description('Where the workbook lives (the resource group\'s location).')
param location string = resourceGroup().location

@description('The app\'s name: the workbook is named after it.')
param appName string

@description('Resource id of the Application Insights component the app exports to.')
param insightsId string

@description('The service name the app reports (OTEL_SERVICE_NAME; Application Insights\' cloud role).')
param serviceName string = 'cosmos-blog'

// Placeholders of the queries below (triple-quoted strings take no interpolation).
var window = '| where timestamp > ago(24h)'
var ours = '| where cloud_RoleName == "${serviceName}"'

var queries = [
  {
    title: 'Requests by operation: count, failures, latency'
    visualization: 'table'
    query: '''requests {window} {ours}
| summarize requests = count(), failed = countif(toint(resultCode) >= 500), refused = countif(toint(resultCode) between (400 .. 499)),
    p50_ms = percentile(duration, 50), p95_ms = percentile(duration, 95), p99_ms = percentile(duration, 99)
    by operation = tostring(customDimensions["blog.operation"]), name
| order by requests desc'''
  }
  {
    title: 'Failures and refusals by problem code'
    visualization: 'timechart'
    query: '''requests {window} {ours} | where toint(resultCode) >= 400
| summarize count() by problem = strcat(resultCode, " ", tostring(customDimensions["blog.problem.code"])), bin(timestamp, 15m)'''
  }
  {
    title: 'RU per operation (C1-C4, Q1-Q7, deletes, handlers)'
    visualization: 'table'
    query: '''customMetrics {window} | where name == "blog.operation.request_charge"
| summarize operations = sum(valueCount), total_ru = sum(valueSum), max_ru = max(valueMax)
    by operation = tostring(customDimensions["blog.operation"])
| extend ru_per_operation = round(total_ru / operations, 2)
| order by total_ru desc'''
  }
  {
    title: 'RU per Cosmos DB call, by container and operation'
    visualization: 'timechart'
    query: '''customMetrics {window} | where name == "azure.cosmosdb.client.operation.request_charge"
| summarize ru = sum(valueSum) by call = strcat(tostring(customDimensions["db.operation.name"]), " ", tostring(customDimensions["db.collection.name"])), bin(timestamp, 15m)'''
  }
  {
    title: 'Throttling: 429s from Cosmos DB, SDK retries, 429s answered'
    visualization: 'timechart'
    query: '''union
  (customMetrics {window} | where name in ("blog.store.throttled", "blog.store.retries")
   | project timestamp, series = strcat(name, " ", tostring(customDimensions["db.collection.name"])), n = valueSum),
  (requests {window} {ours} | where resultCode == "429" | project timestamp, series = "answered 429", n = 1.0)
| summarize sum(n) by series, bin(timestamp, 5m)'''
  }
  {
    title: 'Change-feed lag by source container (s; _ts has whole seconds)'
    visualization: 'timechart'
    query: '''customMetrics {window} | where name == "blog.change_feed.lag"
| summarize mean_s = sum(valueSum) / sum(valueCount), max_s = max(valueMax)
    by source = tostring(customDimensions["blog.change_feed.source"]), bin(timestamp, 5m)'''
  }
  {
    title: 'Hot posts: writes per combined batch'
    visualization: 'timechart'
    query: '''customMetrics {window} | where name == "blog.combiner.batch.size"
| summarize batches = sum(valueCount), mean_writes = sum(valueSum) / sum(valueCount), max_writes = max(valueMax) by bin(timestamp, 15m)'''
  }
]

var intro = {
  type: 1
  content: {
    json: '## ${appName}\nRequests, failures, request units, throttling and change-feed lag, from the telemetry the app exports (see docs/observing.md in the repository). Times: the last 24 hours.'
  }
  name: 'intro'
}

var queryItems = [for (q, i) in queries: {
  type: 3
  content: {
    version: 'KqlItem/1.0'
    query: replace(replace(q.query, '{window}', window), '{ours}', ours)
    size: 0
    title: q.title
    queryType: 0
    resourceType: 'microsoft.insights/components'
    visualization: q.visualization
  }
  name: 'query-${i}'
}]

var workbook = {
  version: 'Notebook/1.0'
  items: concat([ intro ], queryItems)
  fallbackResourceIds: [ insightsId ]
  '$schema': 'https://github.com/Microsoft/Application-Insights-Workbooks/blob/master/schema/workbook.json'
}

resource dashboard 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, insightsId, 'cosmos-blog-dashboard')
  location: location
  kind: 'shared'
  properties: {
    displayName: '${appName}: requests, RU, throttling, change-feed lag'
    category: 'workbook'
    sourceId: insightsId
    serializedData: string(workbook)
    version: '1.0'
  }
}

output workbookId string = dashboard.id
