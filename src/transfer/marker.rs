//! The mark of an import under way: an item of `leases` written before the import's first
//! write and removed after its last. A store that still holds it was left by an import that
//! did not finish (killed, or failed): some sources and copies are missing, though nothing
//! else says so. `serve` refuses such a store, `verify` fails on it, `export` refuses it, and
//! the next import of the same export finishes the job and removes the mark.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::domain::{TenantId, Timestamp};
use crate::store::{Container, PartitionKey, Store};

/// The id of the mark in `leases` (apart from the change feed's checkpoints and leases).
pub const MARKER_ID: &str = "import-in-progress";

/// Which export an import loads, and since when: what the mark holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnfinishedImport {
    /// The export's identity: a digest of its manifest, which names when it was taken and
    /// how many items of each kind it holds.
    pub export: String,
    /// The export's folder, as the import was given it (absolute where it could be).
    pub from: PathBuf,
    /// The `--tenant` the import was run with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    /// When the import began.
    pub started_at: Timestamp,
}

impl UnfinishedImport {
    /// The mark of an import of the export identified by `export`, from `from`, beginning now.
    pub fn begin(export: String, from: &Path, tenant: Option<TenantId>) -> Self {
        Self {
            export,
            from: std::path::absolute(from).unwrap_or_else(|_| from.to_owned()),
            tenant,
            started_at: Timestamp::now(),
        }
    }

    /// Whether `other` loads the same export the same way (the same tenant picked).
    pub(crate) fn same_import(&self, other: &UnfinishedImport) -> bool {
        self.export == other.export && self.tenant == other.tenant
    }

    /// The command that finishes it (with the store settings it was run with).
    pub fn finish_command(&self) -> String {
        let tenant = match &self.tenant {
            Some(tenant) => format!(" --tenant {tenant}"),
            None => String::new(),
        };
        format!(
            "cosmos-blog import --from {}{tenant}",
            shell_word(&self.from.display().to_string())
        )
    }
}

impl std::fmt::Display for UnfinishedImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "an import did not finish: the import of export {} (from {}) begun at {} left \
             this store incomplete; finish it with `{}` and the same store settings",
            self.export,
            self.from.display(),
            self.started_at,
            self.finish_command()
        )
    }
}

/// A path as one shell word: quoted when it holds anything a shell would split or expand.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn marker_key() -> PartitionKey {
    PartitionKey::single(MARKER_ID)
}

/// The mark of an unfinished import in `store`, if there is one.
pub async fn unfinished_import(store: &Arc<dyn Store>) -> anyhow::Result<Option<UnfinishedImport>> {
    let Some(document) = store
        .read_item(Container::Leases, &marker_key(), MARKER_ID)
        .await
        .context("cannot read the mark of an unfinished import in leases")?
    else {
        return Ok(None);
    };
    let unfinished = serde_json::from_value(document.item)
        .with_context(|| format!("the item {MARKER_ID:?} of leases is not an import's mark"))?;
    Ok(Some(unfinished))
}

/// Writes the mark: from now on the store says an import is under way.
pub(super) async fn mark(store: &Arc<dyn Store>, import: &UnfinishedImport) -> anyhow::Result<()> {
    let mut item = serde_json::to_value(import)?;
    item["id"] = MARKER_ID.into();
    store
        .upsert_item(Container::Leases, &marker_key(), item)
        .await
        .context("cannot mark the import in leases")?;
    Ok(())
}

/// Removes the mark, once the import's last write is done.
pub(super) async fn unmark(store: &Arc<dyn Store>) -> anyhow::Result<()> {
    match store
        .delete_item(Container::Leases, &marker_key(), MARKER_ID)
        .await
    {
        Ok(()) | Err(crate::store::StoreError::NotFound) => Ok(()),
        Err(e) => Err(e).context("cannot remove the mark of the import from leases"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_to_finish_names_the_folder_as_one_word() {
        let tenant = TenantId::parse("contoso").ok();
        let mut import = UnfinishedImport::begin("abc".into(), Path::new("/data/export"), tenant);
        assert_eq!(
            import.finish_command(),
            "cosmos-blog import --from /data/export --tenant contoso"
        );
        import.from = PathBuf::from("/my exports/it's");
        import.tenant = None;
        assert_eq!(
            import.finish_command(),
            r"cosmos-blog import --from '/my exports/it'\''s'"
        );
    }
}
