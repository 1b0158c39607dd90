//! How the Blob Storage image store reaches its account with a connection string (Azurite's,
//! or an account key's): the string read, and an account shared access signature (SAS) signed
//! with the key. The official client takes a Microsoft Entra ID credential or a URL carrying a
//! SAS, never a key, and signs no SAS itself: the key signs one here (HMAC-SHA256, as the
//! Storage service defines an account SAS), and the key itself never leaves the process.

use anyhow::Context;
use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use url::Url;

use crate::connection_string;

/// Azurite's well-known development account (`UseDevelopmentStorage=true`): public, documented
/// with the emulator, good for nothing else.
const DEVELOPMENT_ACCOUNT: &str = "devstoreaccount1";
const DEVELOPMENT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const DEVELOPMENT_BLOB_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// The service version the signature is made for (the layout of the string signed).
const SAS_VERSION: &str = "2022-11-02";
/// Read, write, delete, list, add, create: what the image store does, no more.
const SAS_PERMISSIONS: &str = "rwdlac";

/// What a connection string says of the blob service.
#[derive(Clone)]
pub(super) struct Connection {
    /// The blob service's URL (`https://{account}.blob.core.windows.net/`, or Azurite's
    /// `http://127.0.0.1:10000/devstoreaccount1/`), ending in `/`.
    pub blob_endpoint: Url,
    pub credentials: Credentials,
}

#[derive(Clone)]
pub(super) enum Credentials {
    /// The account's name and its key (decoded): a SAS is signed with it.
    Key { account: String, key: Vec<u8> },
    /// A SAS the string gives ready-made (`SharedAccessSignature=...`).
    Signature(String),
}

impl std::fmt::Debug for Connection {
    /// Never the key or a signature.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("blob_endpoint", &self.blob_endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Reads `DefaultEndpointsProtocol=...;AccountName=...;AccountKey=...;BlobEndpoint=...;`
    /// (names in any order and case, others ignored), `BlobEndpoint=...;SharedAccessSignature=...`,
    /// or `UseDevelopmentStorage=true`. Errors never echo the string: it holds a secret.
    pub fn parse(connection: &str) -> anyhow::Result<Self> {
        let fields = connection_string::fields(connection, "BLOG_IMAGES_CONNECTION")?;
        let field = |name: &str| fields.get(name).filter(|v| !v.is_empty()).cloned();
        if field("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Self::with_key(
                DEVELOPMENT_BLOB_ENDPOINT,
                DEVELOPMENT_ACCOUNT,
                DEVELOPMENT_KEY,
            );
        }
        let account = field("accountname");
        let blob_endpoint = match (field("blobendpoint"), &account) {
            (Some(endpoint), _) => endpoint,
            (None, Some(account)) => {
                let protocol = field("defaultendpointsprotocol").unwrap_or_else(|| "https".into());
                let suffix = field("endpointsuffix").unwrap_or_else(|| "core.windows.net".into());
                format!("{protocol}://{account}.blob.{suffix}")
            }
            (None, None) => anyhow::bail!(
                "BLOG_IMAGES_CONNECTION needs BlobEndpoint=... or AccountName=... \
                 (for the managed identity set BLOG_IMAGES_ENDPOINT instead)"
            ),
        };
        match (field("sharedaccesssignature"), account, field("accountkey")) {
            (Some(signature), _, _) => Ok(Self {
                blob_endpoint: endpoint_url(&blob_endpoint)?,
                credentials: Credentials::Signature(signature.trim_start_matches('?').to_owned()),
            }),
            (None, Some(account), Some(key)) => Self::with_key(&blob_endpoint, &account, &key),
            _ => anyhow::bail!(
                "BLOG_IMAGES_CONNECTION needs AccountName=...;AccountKey=... or \
                 SharedAccessSignature=... (for the managed identity set BLOG_IMAGES_ENDPOINT \
                 instead)"
            ),
        }
    }

    fn with_key(blob_endpoint: &str, account: &str, key: &str) -> anyhow::Result<Self> {
        let key = STANDARD
            .decode(key)
            .context("the AccountKey of BLOG_IMAGES_CONNECTION is not base64")?;
        Ok(Self {
            blob_endpoint: endpoint_url(blob_endpoint)?,
            credentials: Credentials::Key {
                account: account.to_owned(),
                key,
            },
        })
    }

    /// Whether the blob service is on this machine (Azurite).
    pub fn is_local(&self) -> bool {
        is_loopback(&self.blob_endpoint)
    }

    /// The query a request carries to be allowed (a SAS), valid until `expiry` when it is
    /// signed here.
    pub fn signature(&self, now: OffsetDateTime, expiry: OffsetDateTime) -> anyhow::Result<String> {
        match &self.credentials {
            Credentials::Signature(signature) => Ok(signature.clone()),
            Credentials::Key { account, key } => {
                let protocol = if self.blob_endpoint.scheme() == "https" {
                    "https"
                } else {
                    "https,http"
                };
                account_sas(account, key, protocol, now, expiry)
            }
        }
    }
}

/// A blob service URL ending in `/`, so that a container's name is appended to its path.
pub(super) fn endpoint_url(endpoint: &str) -> anyhow::Result<Url> {
    let mut url =
        Url::parse(endpoint).with_context(|| format!("not a blob service URL: {endpoint:?}"))?;
    anyhow::ensure!(
        matches!(url.scheme(), "https" | "http") && url.host().is_some(),
        "not a blob service URL (http or https, with a host): {endpoint:?}"
    );
    anyhow::ensure!(
        url.query().is_none() && url.fragment().is_none(),
        "a blob service URL carries no query or fragment (a SAS belongs in \
         BLOG_IMAGES_CONNECTION's SharedAccessSignature=...): {}",
        url.origin().ascii_serialization()
    );
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

pub(super) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// An account SAS for the blob service (`ss=b`), on the service, its containers and their
/// blobs (`srt=sco`), with [`SAS_PERMISSIONS`], from five minutes before `now` (clocks differ)
/// until `expiry`: the query string, signature included.
fn account_sas(
    account: &str,
    key: &[u8],
    protocol: &str,
    now: OffsetDateTime,
    expiry: OffsetDateTime,
) -> anyhow::Result<String> {
    let start = sas_time(now - time::Duration::minutes(5))?;
    let expiry = sas_time(expiry)?;
    let (services, resource_types) = ("b", "sco");
    // The account SAS's string to sign (service version 2020-12-06 and later): each field on
    // its line, the encryption scope empty, and a final newline.
    let to_sign = [
        account,
        SAS_PERMISSIONS,
        services,
        resource_types,
        &start,
        &expiry,
        "",
        protocol,
        SAS_VERSION,
        "",
        "",
    ]
    .join("\n");
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), to_sign.as_bytes());
    let signature = STANDARD.encode(tag.as_ref());
    Ok(url::form_urlencoded::Serializer::new(String::new())
        .append_pair("sv", SAS_VERSION)
        .append_pair("ss", services)
        .append_pair("srt", resource_types)
        .append_pair("sp", SAS_PERMISSIONS)
        .append_pair("st", &start)
        .append_pair("se", &expiry)
        .append_pair("spr", protocol)
        .append_pair("sig", &signature)
        .finish())
}

/// `2026-11-27T10:00:00Z`: UTC, whole seconds, as the service reads SAS times.
fn sas_time(at: OffsetDateTime) -> anyhow::Result<String> {
    let at = at
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .context("a time in whole seconds")?;
    at.format(&Rfc3339).context("cannot write a SAS time")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azurites_connection_string_reads_as_its_account_and_endpoint() {
        let connection = Connection::parse(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
             AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\
             BlobEndpoint=http://127.0.0.1:41234/devstoreaccount1;",
        )
        .unwrap();
        assert_eq!(
            connection.blob_endpoint.as_str(),
            "http://127.0.0.1:41234/devstoreaccount1/"
        );
        assert!(connection.is_local());
        let Credentials::Key { account, key } = &connection.credentials else {
            panic!("a key");
        };
        assert_eq!(account, "devstoreaccount1");
        assert_eq!(key.len(), 64);

        let development = Connection::parse("UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            development.blob_endpoint.as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/"
        );
    }

    #[test]
    fn an_account_without_a_blob_endpoint_is_azures_and_errors_never_show_the_key() {
        let connection = Connection::parse(
            "AccountName=blogimages;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net",
        )
        .unwrap();
        assert_eq!(
            connection.blob_endpoint.as_str(),
            "https://blogimages.blob.core.windows.net/"
        );
        assert!(!connection.is_local());
        assert!(!format!("{connection:?}").contains("c2VjcmV0"));

        for refused in [
            "AccountName=a",
            "AccountKey=c2VjcmV0",
            "AccountName=a;AccountKey=not base64!",
            "nonsense",
        ] {
            let error = format!("{:#}", Connection::parse(refused).unwrap_err());
            assert!(
                !error.contains("c2VjcmV0") && !error.contains("base64!"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_signature_is_the_services_account_sas() {
        // The string signed, and so the signature, of the Storage service's account SAS for
        // these fields (checked against Azurite, which computes it the same way).
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let expiry = now + time::Duration::days(1);
        let sas = account_sas("acct", b"key", "https,http", now, expiry).unwrap();
        let fields: std::collections::HashMap<_, _> = url::form_urlencoded::parse(sas.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(fields["sv"], SAS_VERSION);
        assert_eq!(fields["sp"], "rwdlac");
        assert_eq!(fields["st"], "2027-01-15T07:55:00Z");
        assert_eq!(fields["se"], "2027-01-16T08:00:00Z");
        let to_sign = "acct\nrwdlac\nb\nsco\n2027-01-15T07:55:00Z\n2027-01-16T08:00:00Z\n\nhttps,http\n2022-11-02\n\n";
        let expected = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, b"key"),
            to_sign.as_bytes(),
        );
        assert_eq!(fields["sig"], STANDARD.encode(expected.as_ref()));
    }
}
