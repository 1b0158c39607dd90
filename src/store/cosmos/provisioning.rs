//! Provisioning: the containers of the model created when missing (with their partition
//! keys, indexing policy and time-to-live) and checked when they exist.

use anyhow::Context;
use azure_core::http::StatusCode;
use azure_data_cosmos::CosmosClient;
use azure_data_cosmos::clients::ContainerClient;
use azure_data_cosmos::models::{ContainerProperties, TimeToLive};
use serde_json::{Value, json};

use crate::store::{Container, Tenancy};

/// The container's indexing policy: everything the queries filter or sort on is indexed by
/// default; the long texts are not (nothing queries them and indexing them costs RU on every
/// write); composite indexes serve "items of a type, newest/oldest first" (Q3, Q4, Q5, Q6),
/// and "posts newest first by publication" (Q8, Q9).
fn indexing_policy(container: Container) -> Value {
    match container {
        Container::Leases => json!({
            "indexingMode": "consistent",
            "automatic": true,
            "includedPaths": [{"path": "/*"}],
            "excludedPaths": [{"path": "/\"_etag\"/?"}]
        }),
        _ => json!({
            "indexingMode": "consistent",
            "automatic": true,
            "includedPaths": [{"path": "/*"}],
            "excludedPaths": [
                {"path": "/content/?"},
                {"path": "/title/?"},
                {"path": "/\"_etag\"/?"}
            ],
            "compositeIndexes": [
                [{"path": "/type", "order": "ascending"}, {"path": "/creationDate", "order": "descending"}],
                [{"path": "/type", "order": "ascending"}, {"path": "/creationDate", "order": "ascending"}],
                [{"path": "/type", "order": "ascending"}, {"path": "/publishedDate", "order": "descending"}]
            ]
        }),
    }
}

fn container_properties(
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<ContainerProperties> {
    let paths = container.key_paths(tenancy);
    let definition = if paths.len() > 1 {
        json!({"paths": paths, "kind": "MultiHash", "version": 2})
    } else {
        json!({"paths": paths, "kind": "Hash", "version": 2})
    };
    let mut properties: ContainerProperties = serde_json::from_value(json!({
        "id": container.name(),
        "partitionKey": definition,
        "indexingPolicy": indexing_policy(container),
    }))
    .context("invalid container definition")?;
    if container.expires_items() {
        properties.default_ttl = TimeToLive::NoDefault;
    }
    Ok(properties)
}

/// Turns time-to-live on ("on, no default": only items with a `ttl` expire) in a container
/// created before deletes existed, so that its tombstones are purged. Changing the default
/// time-to-live is allowed on an existing container; it touches no item.
async fn enable_time_to_live(
    opened: &ContainerClient,
    mut properties: ContainerProperties,
    database: &str,
    container: Container,
) -> anyhow::Result<()> {
    if !container.expires_items() || properties.default_ttl != TimeToLive::Forever {
        return Ok(());
    }
    let name = container.name();
    properties.default_ttl = TimeToLive::NoDefault;
    opened.replace(properties, None).await.with_context(|| {
        format!(
            "cannot turn on time-to-live in container {database}/{name} (needed to purge \
             deleted items); set defaultTtl -1 with the infrastructure templates or the Azure CLI"
        )
    })?;
    tracing::info!(database, container = name, "turned on time-to-live");
    Ok(())
}

/// Opens `container`, creating it (and the database) when missing, and checks that it is
/// partitioned as the data model requires: a wrong key would make every write fail.
pub(super) async fn prepare_container(
    client: &CosmosClient,
    database: &str,
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<ContainerClient> {
    let name = container.name();
    let db = client.database_client(database);
    let opened = match db.container_client(name, None).await {
        Ok(opened) => opened,
        Err(e) if e.status().status_code() == StatusCode::NotFound => {
            create_container(client, database, container, tenancy).await?;
            db.container_client(name, None).await.with_context(|| {
                format!("cannot open container {database}/{name} after creating it")
            })?
        }
        Err(e) => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot open container {database}/{name}"));
        }
    };
    let properties: ContainerProperties = opened
        .read(None)
        .await
        .and_then(|response| response.into_model())
        .with_context(|| format!("cannot read the definition of container {database}/{name}"))?;
    let actual = key_paths(&properties);
    let expected = container.key_paths(tenancy);
    if actual != expected {
        let other = match tenancy {
            Tenancy::Single => Tenancy::Multi,
            Tenancy::Multi => Tenancy::Single,
        };
        let layout = if actual == container.key_paths(other) {
            format!(" (the {other} layout)")
        } else {
            String::new()
        };
        anyhow::bail!(
            "container {database}/{name} is partitioned by {actual:?}{layout} but BLOG_TENANCY={tenancy} \
             needs {expected:?}; a container's partition key cannot be changed: set BLOG_TENANCY to \
             the layout the database was created with, or use another database (COSMOS_DATABASE)"
        );
    }
    enable_time_to_live(&opened, properties, database, container).await?;
    Ok(opened)
}

/// The paths of a container's partition key, as its definition lists them.
fn key_paths(properties: &ContainerProperties) -> Vec<&str> {
    properties
        .partition_key
        .paths()
        .iter()
        .map(|p| p.as_ref())
        .collect()
}

async fn create_container(
    client: &CosmosClient,
    database: &str,
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<()> {
    let hint = "with Microsoft Entra ID, data-plane roles cannot create databases or containers: \
                create them with the infrastructure templates (infra/) or the Azure CLI";
    match client.create_database(database, None).await {
        Ok(_) => tracing::info!(database, "created the Cosmos DB database"),
        // Created meanwhile by another instance, or existing already.
        Err(e) if e.status().status_code() == StatusCode::Conflict => {}
        Err(e) if e.status().status_code() == StatusCode::Forbidden => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot create database {database} ({hint})"));
        }
        Err(e) => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot create database {database}"));
        }
    }
    let name = container.name();
    match client
        .database_client(database)
        .create_container(container_properties(container, tenancy)?, None)
        .await
    {
        Ok(_) => {
            tracing::info!(
                database,
                container = name,
                "created the Cosmos DB container"
            );
            Ok(())
        }
        Err(e) if e.status().status_code() == StatusCode::Conflict => Ok(()),
        Err(e) if e.status().status_code() == StatusCode::Forbidden => Err(anyhow::Error::new(e))
            .with_context(|| format!("cannot create container {database}/{name} ({hint})")),
        Err(e) => Err(anyhow::Error::new(e))
            .with_context(|| format!("cannot create container {database}/{name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_definitions_carry_the_model_partition_keys() {
        for tenancy in [Tenancy::Single, Tenancy::Multi] {
            for container in Container::ALL {
                let properties = container_properties(container, tenancy).unwrap();
                let paths = key_paths(&properties);
                assert_eq!(paths, container.key_paths(tenancy));
                let definition = serde_json::to_value(&properties.partition_key).unwrap();
                let kind = if paths.len() > 1 { "MultiHash" } else { "Hash" };
                assert_eq!(definition["kind"], kind, "{container:?} in {tenancy}");
            }
        }
    }
}
