//! Azure Blob Storage: each image's bytes a block blob in one container, named as the
//! [`ImageStore`] names them (`blog/{id}`, `tenants/{tenant}/{id}.w480`...), through the
//! official `azure_storage_blob` client.
//!
//! A blob upload is atomic: a reader gets the blob's previous bytes (none, for a new image) or
//! the whole new ones, never a part, whether the client sends one request or commits staged
//! blocks. Bytes are written before their item and removed after it (the blog's commands), so
//! an upload or delete cut off leaves a blob no item names, which `verify` lists and
//! `verify --repair` removes, as with the files of the embedded default.
//!
//! Two ways in: `BLOG_IMAGES_ENDPOINT`, the blob service's URL reached with the app's managed
//! identity (Microsoft Entra ID, no key: the container must exist, the Azure template makes
//! it); or `BLOG_IMAGES_CONNECTION`, a connection string (Azurite's, say) whose key signs a
//! shared access signature, the container made when missing.

use std::sync::{Arc, RwLock};

use anyhow::Context;
use async_trait::async_trait;
use azure_core::credentials::TokenCredential;
use azure_core::http::StatusCode;
use azure_storage_blob::BlobContainerClient;
use azure_storage_blob::models::BlockBlobClientUploadOptions;
use bytes::Bytes;
use futures::TryStreamExt;
use time::OffsetDateTime;
use url::Url;

use super::blob_access::{Connection, endpoint_url};
use super::store::{ImageStore, ImageStoreError};

/// How long a signature made from an account key is good for; a new one is signed once less
/// than [`RESIGN_BEFORE`] of it is left, so a long-running server never holds an expired one.
const SIGNATURE_LIFETIME: time::Duration = time::Duration::days(2);
const RESIGN_BEFORE: time::Duration = time::Duration::days(1);

pub struct BlobImageStore {
    access: Access,
    /// `{endpoint}{container}`, for logs and errors (never a signature).
    location: String,
}

enum Access {
    /// One client for the store's life: the credential fetches and renews its own tokens.
    Identity(Arc<BlobContainerClient>),
    /// A client whose URL carries a signature, replaced before the signature expires.
    Signed {
        connection: Connection,
        container: String,
        current: RwLock<Signed>,
    },
}

#[derive(Clone)]
struct Signed {
    client: Arc<BlobContainerClient>,
    expiry: OffsetDateTime,
}

impl BlobImageStore {
    /// The container `container` of the blob service at `endpoint`, reached with `credential`
    /// (the app's managed identity). The container must exist: the app only reads and writes
    /// blobs, so its identity needs no right to make containers.
    pub async fn with_identity(
        endpoint: &str,
        container: &str,
        credential: Arc<dyn TokenCredential>,
    ) -> anyhow::Result<Self> {
        let url = container_url(&endpoint_url(endpoint)?, container, None)?;
        let location = url.to_string();
        let client = BlobContainerClient::new(url, Some(credential), None)
            .with_context(|| format!("cannot make the Blob Storage client of {location}"))?;
        let exists = client.exists().await.with_context(|| {
            format!(
                "cannot reach the images' Blob Storage container {location} with the app's \
                 managed identity (it needs the Storage Blob Data Contributor role there)"
            )
        })?;
        anyhow::ensure!(
            exists,
            "the images' Blob Storage container {location} does not exist: the Azure template \
             creates it; create it, or name an existing one with BLOG_IMAGES_CONTAINER"
        );
        Ok(Self {
            access: Access::Identity(Arc::new(client)),
            location,
        })
    }

    /// The container `container` of the account a connection string names, made when
    /// missing (Azurite starts empty).
    pub async fn with_connection_string(connection: &str, container: &str) -> anyhow::Result<Self> {
        let connection = Connection::parse(connection)?;
        if connection.blob_endpoint.scheme() != "https" && !connection.is_local() {
            anyhow::bail!(
                "BLOG_IMAGES_CONNECTION names a blob service over plain http on another \
                 machine ({}): its signatures would travel in the clear; use https",
                connection.blob_endpoint.origin().ascii_serialization()
            );
        }
        if !connection.is_local() {
            tracing::warn!(
                endpoint = %connection.blob_endpoint.origin().ascii_serialization(),
                "BLOG_IMAGES_CONNECTION reaches a storage account with a key or a signature; \
                 in Azure use BLOG_IMAGES_ENDPOINT, the managed identity, instead"
            );
        }
        let location = container_url(&connection.blob_endpoint, container, None)?.to_string();
        let signed = sign(&connection, container)?;
        let created = signed.client.create(None).await;
        match created {
            Ok(_) => tracing::info!(container = %location, "created the images' container"),
            Err(e) if e.http_status() == Some(StatusCode::Conflict) => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot reach or create the images' Blob Storage container {location}")
                });
            }
        }
        Ok(Self {
            access: Access::Signed {
                connection,
                container: container.to_owned(),
                current: RwLock::new(signed),
            },
            location,
        })
    }

    /// Where the bytes are: the container's URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The container's client, with a fresh signature when the one held is about to expire.
    fn container(&self) -> Result<Arc<BlobContainerClient>, ImageStoreError> {
        match &self.access {
            Access::Identity(client) => Ok(Arc::clone(client)),
            Access::Signed {
                connection,
                container,
                current,
            } => {
                let held = current
                    .read()
                    .map_err(|_| failure("the signature's lock is poisoned"))?
                    .clone();
                if held.expiry - OffsetDateTime::now_utc() > RESIGN_BEFORE {
                    return Ok(held.client);
                }
                let fresh = sign(connection, container)
                    .map_err(|e| failure(format!("cannot sign for {}: {e:#}", self.location)))?;
                if let Ok(mut current) = current.write() {
                    *current = fresh.clone();
                }
                Ok(fresh.client)
            }
        }
    }

    fn failed(&self, what: &str, name: &str, error: azure_core::Error) -> ImageStoreError {
        failure(format!(
            "cannot {what} {name} in {}: {error}",
            self.location
        ))
    }
}

fn failure(message: impl Into<String>) -> ImageStoreError {
    ImageStoreError(message.into())
}

/// `{endpoint}{container}` with `query` (a signature) when given.
fn container_url(endpoint: &Url, container: &str, query: Option<&str>) -> anyhow::Result<Url> {
    anyhow::ensure!(
        is_container_name(container),
        "BLOG_IMAGES_CONTAINER {container:?} is not a container name (3 to 63 lower-case \
         letters, digits and single hyphens, starting and ending with a letter or digit)"
    );
    let mut url = endpoint
        .join(container)
        .with_context(|| format!("cannot name the container {container:?}"))?;
    url.set_query(query);
    Ok(url)
}

/// The Storage service's rule for a container's name.
fn is_container_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn sign(connection: &Connection, container: &str) -> anyhow::Result<Signed> {
    let now = OffsetDateTime::now_utc();
    let expiry = now + SIGNATURE_LIFETIME;
    let signature = connection.signature(now, expiry)?;
    let url = container_url(&connection.blob_endpoint, container, Some(&signature))?;
    // A client with no credential: the URL's signature is the authorisation. The client refuses
    // a credential over http, and Azurite speaks http.
    let client =
        BlobContainerClient::new(url, None, None).context("cannot make the Blob Storage client")?;
    Ok(Signed {
        client: Arc::new(client),
        expiry,
    })
}

/// The blob (or the container) is not there.
fn not_found(error: &azure_core::Error) -> bool {
    error.http_status() == Some(StatusCode::NotFound)
}

#[async_trait]
impl ImageStore for BlobImageStore {
    fn backend(&self) -> &'static str {
        "blob"
    }

    async fn put(
        &self,
        name: &str,
        bytes: Bytes,
        content_type: &str,
    ) -> Result<(), ImageStoreError> {
        let options = BlockBlobClientUploadOptions {
            blob_content_type: Some(content_type.to_owned()),
            ..Default::default()
        };
        self.container()?
            .blob_client(name)
            .block_blob_client()
            .upload(bytes.into(), Some(options))
            .await
            .map_err(|e| self.failed("write", name, e))?;
        Ok(())
    }

    async fn get(&self, name: &str) -> Result<Option<Bytes>, ImageStoreError> {
        let blob = self.container()?.blob_client(name);
        let downloaded = match blob.download(None).await {
            Ok(downloaded) => downloaded,
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => return Err(self.failed("read", name, e)),
        };
        let bytes = downloaded
            .body
            .collect()
            .await
            .map_err(|e| self.failed("read", name, e))?;
        Ok(Some(bytes))
    }

    async fn delete(&self, name: &str) -> Result<(), ImageStoreError> {
        match self.container()?.blob_client(name).delete(None).await {
            Ok(_) => Ok(()),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(self.failed("delete", name, e)),
        }
    }

    /// Every committed blob of the container: blocks staged by an upload that never committed
    /// are no blob (the service drops them within a week), so they are not listed.
    async fn list(&self) -> Result<Vec<String>, ImageStoreError> {
        let mut blobs = self
            .container()?
            .list_blobs(None)
            .map_err(|e| self.failed("list", "the blobs", e))?;
        let mut names = Vec::new();
        while let Some(blob) = blobs
            .try_next()
            .await
            .map_err(|e| self.failed("list", "the blobs", e))?
        {
            if let Some(name) = blob.name {
                names.push(name);
            }
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::super::blob_access::is_loopback;
    use super::*;

    #[test]
    fn container_names_follow_the_services_rule() {
        for good in ["images", "img-2", "abc"] {
            assert!(is_container_name(good), "{good}");
        }
        for bad in [
            "ab",
            "Images",
            "-img",
            "img-",
            "a--b",
            "a/b",
            "a?sig=x",
            &"a".repeat(64),
        ] {
            assert!(!is_container_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_signature_about_to_expire_is_replaced_before_use() {
        let connection = Connection::parse("UseDevelopmentStorage=true").unwrap();
        let mut stale = sign(&connection, "images").unwrap();
        stale.expiry = OffsetDateTime::now_utc() + time::Duration::hours(1);
        let store = BlobImageStore {
            access: Access::Signed {
                connection,
                container: "images".into(),
                current: RwLock::new(stale),
            },
            location: "test".into(),
        };
        let client = store.container().unwrap();
        let Access::Signed { current, .. } = &store.access else {
            unreachable!()
        };
        let held = current.read().unwrap().clone();
        assert!(held.expiry - OffsetDateTime::now_utc() > RESIGN_BEFORE);
        assert!(Arc::ptr_eq(&held.client, &client));
        let signed_until = url::form_urlencoded::parse(client.url().query().unwrap().as_bytes())
            .find(|(name, _)| name == "se")
            .map(|(_, value)| value.into_owned())
            .unwrap();
        let signed_until = OffsetDateTime::parse(
            &signed_until,
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert!(signed_until - OffsetDateTime::now_utc() > RESIGN_BEFORE);
        // Fresh enough: the same client again.
        assert!(Arc::ptr_eq(&store.container().unwrap(), &client));
    }

    #[test]
    fn the_container_url_appends_the_container_to_the_service_path() {
        let azurite = endpoint_url("http://127.0.0.1:10000/devstoreaccount1").unwrap();
        assert_eq!(
            container_url(&azurite, "images", Some("sv=1&sig=x"))
                .unwrap()
                .as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/images?sv=1&sig=x"
        );
        let azure = endpoint_url("https://blog.blob.core.windows.net").unwrap();
        assert_eq!(
            container_url(&azure, "images", None).unwrap().as_str(),
            "https://blog.blob.core.windows.net/images"
        );
        assert!(is_loopback(&azurite) && !is_loopback(&azure));
    }
}
