//! `BLOG_AUTH=jwt`: the caller is a claim of an `Authorization: Bearer <JWT>` token, checked by
//! the `jsonwebtoken` crate: an RS256 or ES256 signature by a key of the configured JWKS, the
//! issuer, the audience, and `exp`/`nbf` with a small leeway. Everything else is refused: `none`,
//! HMAC (a public key must never double as a shared secret) and any other algorithm.
//!
//! The key set comes from an https URL (fetched at start-up, cached, fetched again when a token
//! names an unknown `kid` or the copy is an hour old, at most once per
//! [`MIN_REFRESH_INTERVAL`]) or from a local file (offline use and tests), read the same way.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::http::{HeaderMap, header};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::AuthError;
use crate::domain::UserId;

/// Clock skew tolerated on `exp` and `nbf`.
pub(crate) const LEEWAY_SECONDS: u64 = 60;
/// A token with an unknown `kid` triggers at most one key-set download per interval, so that
/// a stream of made-up `kid`s cannot turn the server into a load generator for the IdP.
pub(crate) const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// Keys are downloaded again after this long, so that a key the IdP withdrew stops working.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);
const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// The claim that holds the caller's user id unless `BLOG_JWT_CLAIM` names another.
pub(crate) const DEFAULT_CLAIM: &str = "sub";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    pub jwks: KeySource,
    pub issuer: String,
    pub audience: String,
    /// The claim that holds the caller's user id.
    pub claim: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Url(Url),
    File(PathBuf),
}

impl KeySource {
    /// A URL when it has a scheme, else a file path.
    pub fn parse(raw: &str) -> anyhow::Result<Self> {
        if !raw.contains("://") {
            return Ok(Self::File(PathBuf::from(raw)));
        }
        let url = Url::parse(raw).with_context(|| format!("BLOG_JWT_JWKS {raw:?} is not a URL"))?;
        anyhow::ensure!(
            acceptable_url(&url),
            "BLOG_JWT_JWKS must be an https URL (plain http only on loopback): {url}"
        );
        Ok(Self::Url(url))
    }
}

/// Keys must come over TLS; plain http is allowed only to this machine (a local IdP, tests).
fn acceptable_url(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => url.host_str().is_some_and(|host| {
            host == "localhost"
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }),
        _ => false,
    }
}

pub struct JwtVerifier {
    config: JwtConfig,
    keys: KeySet,
}

impl JwtVerifier {
    /// Loads the key set. A file that cannot be read is a start-up error; a URL that cannot be
    /// reached yet is retried on the first token (identity providers have bad minutes too).
    pub async fn start(config: JwtConfig) -> anyhow::Result<Self> {
        let keys = KeySet::new(config.jwks.clone())?;
        match keys.load().await {
            Ok(loaded) => {
                tracing::info!(keys = loaded.len(), "JWT key set loaded");
                keys.replace(loaded);
            }
            Err(e) if matches!(config.jwks, KeySource::Url(_)) => {
                tracing::warn!("cannot load the JWT key set yet, will retry: {e:#}");
            }
            Err(e) => return Err(e.context("cannot load the JWT key set (BLOG_JWT_JWKS)")),
        }
        Ok(Self { config, keys })
    }

    pub async fn caller(&self, headers: &HeaderMap) -> Result<UserId, AuthError> {
        let token = bearer_token(headers)?;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("it is not a well-formed JWT with a known algorithm"))?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(invalid("only RS256 and ES256 tokens are accepted"));
        }
        let candidates = self.keys.matching(header.kid.as_deref(), header.alg).await;
        if candidates.is_empty() {
            return Err(invalid(
                "no key of the key set matches its kid and algorithm",
            ));
        }
        let claims = self.verify(token, header.alg, &candidates)?;
        let claim = &self.config.claim;
        let id = claims
            .get(claim)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("it has no string claim `{claim}`")))?;
        UserId::parse(id).map_err(|e| invalid(format!("its `{claim}` claim is no user id: {e}")))
    }

    /// The claims, if one of the candidate keys verifies the token and the claims hold.
    fn verify(
        &self,
        token: &str,
        alg: Algorithm,
        candidates: &[DecodingKey],
    ) -> Result<Map<String, Value>, AuthError> {
        let validation = self.validation(alg);
        let mut refusal = invalid("its signature does not verify");
        for key in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => return Ok(data.claims),
                // Without a kid several keys may be tried; another may verify it.
                Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => {}
                Err(e) => {
                    refusal = invalid(reason(e.kind()));
                    break;
                }
            }
        }
        Err(refusal)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        // jsonwebtoken skips the issuer and audience checks when the claim is absent.
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation
    }
}

fn invalid(why: impl Into<String>) -> AuthError {
    AuthError::InvalidToken(why.into())
}

fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "it has expired".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => "it was issued for another audience".into(),
        ErrorKind::InvalidIssuer => "it was issued by another issuer".into(),
        ErrorKind::InvalidSignature => "its signature does not verify".into(),
        ErrorKind::InvalidAlgorithm => "its algorithm does not match the key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("its `{claim}` claim is malformed"),
        _ => "it is malformed".into(),
    }
}

/// The token of `Authorization: Bearer <token>`; any other scheme counts as no token.
fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(AuthError::MissingToken)?
        .to_str()
        .map_err(|_| invalid("the Authorization header is not ASCII"))?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MissingToken);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(invalid("the bearer token is empty"));
    }
    Ok(token)
}

/// A verification key of the set, with the one algorithm it may verify.
struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

struct Loaded {
    keys: Arc<[Key]>,
    at: Option<Instant>,
}

struct KeySet {
    source: KeySource,
    http: reqwest::Client,
    current: RwLock<Loaded>,
    /// When the last on-demand download was attempted; the lock also makes concurrent
    /// requests with the same unknown `kid` wait for one download instead of each starting one.
    last_refresh: tokio::sync::Mutex<Option<Instant>>,
}

impl KeySet {
    fn new(source: KeySource) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() < 5 && acceptable_url(attempt.url()) {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .context("cannot build the HTTP client for the JWT key set")?;
        Ok(Self {
            source,
            http,
            current: RwLock::new(Loaded {
                keys: Arc::from(Vec::new()),
                at: None,
            }),
            last_refresh: tokio::sync::Mutex::new(None),
        })
    }

    /// The keys that may verify a token with this `kid` (any key when it has none) and
    /// algorithm, downloading the set again when none does or the copy is old.
    async fn matching(&self, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
        if self.is_stale() {
            self.refresh().await;
        }
        let found = self.find(kid, alg);
        if !found.is_empty() {
            return found;
        }
        self.refresh().await;
        self.find(kid, alg)
    }

    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
        let keys = match self.current.read() {
            Ok(current) => Arc::clone(&current.keys),
            Err(poisoned) => Arc::clone(&poisoned.into_inner().keys),
        };
        keys.iter()
            .filter(|k| k.alg == alg && (kid.is_none() || k.kid.as_deref() == kid))
            .map(|k| k.key.clone())
            .collect()
    }

    fn is_stale(&self) -> bool {
        match self.current.read() {
            Ok(current) => current.at.is_none_or(|at| at.elapsed() > MAX_KEY_AGE),
            Err(_) => true,
        }
    }

    fn replace(&self, keys: Vec<Key>) {
        let loaded = Loaded {
            keys: Arc::from(keys),
            at: Some(Instant::now()),
        };
        match self.current.write() {
            Ok(mut current) => *current = loaded,
            Err(poisoned) => *poisoned.into_inner() = loaded,
        }
    }

    /// Downloads the set again unless that was tried less than [`MIN_REFRESH_INTERVAL`] ago.
    /// A failed download keeps the previous keys.
    async fn refresh(&self) {
        let mut last = self.last_refresh.lock().await;
        if last.is_some_and(|at| at.elapsed() < MIN_REFRESH_INTERVAL) {
            return;
        }
        *last = Some(Instant::now());
        match self.load().await {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "JWT key set refreshed");
                self.replace(keys);
            }
            Err(e) => tracing::error!("cannot refresh the JWT key set: {e:#}"),
        }
    }

    async fn load(&self) -> anyhow::Result<Vec<Key>> {
        let bytes = match &self.source {
            KeySource::File(path) => tokio::fs::read(path)
                .await
                .with_context(|| format!("cannot read {}", path.display()))?,
            KeySource::Url(url) => self
                .download(url)
                .await
                .with_context(|| format!("cannot download {url}"))?,
        };
        parse_key_set(&bytes)
    }

    async fn download(&self, url: &Url) -> anyhow::Result<Vec<u8>> {
        let mut response = self
            .http
            .get(url.clone())
            .send()
            .await?
            .error_for_status()?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            anyhow::ensure!(
                body.len() + chunk.len() <= MAX_JWKS_BYTES,
                "the key set is larger than {MAX_JWKS_BYTES} bytes"
            );
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// The usable keys of a JWKS document; keys of other kinds or uses are skipped, not fatal
/// (identity providers publish encryption keys and new algorithms next to signing keys).
fn parse_key_set(bytes: &[u8]) -> anyhow::Result<Vec<Key>> {
    #[derive(Deserialize)]
    struct Document {
        keys: Vec<Value>,
    }
    let document: Document =
        serde_json::from_slice(bytes).context("not a JWKS document ({\"keys\": [...]})")?;
    let keys: Vec<Key> = document
        .keys
        .into_iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
        .filter_map(|jwk| verification_key(&jwk))
        .collect();
    anyhow::ensure!(
        !keys.is_empty(),
        "the key set holds no RS256 or ES256 (P-256) signature key"
    );
    Ok(keys)
}

fn verification_key(jwk: &Jwk) -> Option<Key> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let alg = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            Algorithm::ES256
        }
        _ => return None,
    };
    let declared_matches = match jwk.common.key_algorithm {
        None => true,
        Some(declared) => matches!(
            (declared, alg),
            (KeyAlgorithm::RS256, Algorithm::RS256) | (KeyAlgorithm::ES256, Algorithm::ES256)
        ),
    };
    if !declared_matches {
        return None;
    }
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        key: DecodingKey::from_jwk(jwk).ok()?,
    })
}
