//! Opens the store the settings choose.

use std::sync::Arc;

use anyhow::Context;

use super::Store;
use super::cosmos::CosmosStore;
use super::embedded::EmbeddedStore;
use super::settings::StoreSettings;

/// Opens the store the settings choose: Cosmos DB when a Cosmos setting is present,
/// the embedded store otherwise.
pub async fn open(settings: &StoreSettings) -> anyhow::Result<Arc<dyn Store>> {
    if settings.uses_cosmos() {
        let store = CosmosStore::connect(settings)
            .await
            .context("cannot open the Azure Cosmos DB store")?;
        return Ok(Arc::new(store));
    }
    let path = settings.embedded_path();
    let store = EmbeddedStore::open_with_readers(&path, settings.tenancy, settings.readers())
        .with_context(|| format!("cannot open the embedded store at {}", path.display()))?;
    tracing::info!(path = %path.display(), "using the embedded store");
    Ok(Arc::new(store))
}

/// [`open_existing`] for the commands that only read (`verify` without `--repair`, `export`):
/// the embedded store is opened read-only ([`EmbeddedStore::open_read_only`]), so a copy
/// without write permission can be checked and nothing is written to it.
pub async fn open_read_only(settings: &StoreSettings) -> anyhow::Result<Arc<dyn Store>> {
    if settings.uses_cosmos() {
        return open(settings).await;
    }
    let path = settings.embedded_path();
    anyhow::ensure!(
        path.exists(),
        "no embedded store at {} (set --data-dir or BLOG_DATA_DIR)",
        path.display()
    );
    let store = EmbeddedStore::open_read_only(&path, settings.tenancy).with_context(|| {
        format!(
            "cannot open the embedded store at {} for reading",
            path.display()
        )
    })?;
    Ok(Arc::new(store))
}

/// [`open`] for the commands that read a store: refuses an embedded data folder that holds
/// none (opening would create an empty one: almost certainly the wrong folder).
pub async fn open_existing(settings: &StoreSettings) -> anyhow::Result<Arc<dyn Store>> {
    let path = settings.embedded_path();
    anyhow::ensure!(
        settings.uses_cosmos() || path.exists(),
        "no embedded store at {} (set --data-dir or BLOG_DATA_DIR)",
        path.display()
    );
    open(settings).await
}

/// `stop-counting`: stops the embedded store's count of writes per partition, which kept pages
/// rely on, for a store whose servers no longer keep them (see
/// [`super::embedded::stop_counting`]); refused while any process has the store open.
pub fn stop_counting(settings: &StoreSettings) -> anyhow::Result<()> {
    anyhow::ensure!(
        !settings.uses_cosmos(),
        "Azure Cosmos DB keeps no count of writes per partition: nothing to stop"
    );
    let path = settings.embedded_path();
    let counted = super::embedded::stop_counting(&path)
        .with_context(|| format!("cannot stop the counting in {}", path.display()))?;
    if counted {
        println!(
            "{}: writes are no longer counted per partition (a server keeping list pages begins again)",
            path.display()
        );
    } else {
        println!("{}: writes were not counted per partition", path.display());
    }
    Ok(())
}
