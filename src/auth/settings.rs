//! The authentication settings, and the mode they resolve to against the platform and the
//! bind address.

use std::net::IpAddr;

use clap::{Args, ValueEnum};

use super::jwt::{DEFAULT_CLAIM, JwtConfig, KeySource};
use crate::platform::Platform;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Trust x-ms-client-principal-id as sent (local development only).
    Header,
    /// Trust x-ms-client-principal-id only when App Service Authentication is on.
    #[value(name = "easyauth")]
    EasyAuth,
    /// Validate `Authorization: Bearer <JWT>` against a JWKS.
    Jwt,
}

#[derive(Debug, Clone, Default, Args)]
pub struct AuthSettings {
    /// How commands identify their caller: `header`, `easyauth` or `jwt`. Default: `easyauth`
    /// under the Functions host or on App Service (any plan), else `header` (which only starts
    /// on a loopback address).
    #[arg(
        long = "auth",
        env = "BLOG_AUTH",
        value_enum,
        ignore_case = true,
        global = true
    )]
    pub mode: Option<AuthMode>,

    /// jwt: the signing keys, an https URL of a JWKS document or the path of a JWKS file.
    #[arg(long, env = "BLOG_JWT_JWKS", global = true)]
    pub jwt_jwks: Option<String>,

    /// jwt: the required `iss` claim.
    #[arg(long, env = "BLOG_JWT_ISSUER", global = true)]
    pub jwt_issuer: Option<String>,

    /// jwt: the required `aud` claim.
    #[arg(long, env = "BLOG_JWT_AUDIENCE", global = true)]
    pub jwt_audience: Option<String>,

    /// jwt: the claim holding the caller's user id [default: sub] (Microsoft Entra ID: `oid`).
    #[arg(long, env = "BLOG_JWT_CLAIM", global = true)]
    pub jwt_claim: Option<String>,

    /// Origins (`https://front.example`, comma-separated) whose pages may call the API with
    /// CORS, and write to it from their site. Empty by default: only this site's own pages.
    #[arg(long, env = "BLOG_CORS_ORIGINS", value_delimiter = ',', global = true)]
    pub cors_origins: Vec<String>,

    /// What the hosting platform says, read from its environment (not a user setting): by
    /// `Settings::read_platform`, or given by a test.
    #[arg(skip)]
    pub platform: Platform,
}

/// The settings resolved against the platform and the bind address, before any key is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// `explicit`: chosen with BLOG_AUTH, not defaulted.
    Header {
        explicit: bool,
    },
    EasyAuth {
        enabled: bool,
    },
    Jwt(JwtConfig),
}

impl AuthSettings {
    /// The mode in force, or why the server must not start with these settings.
    pub fn resolve(&self, bind: IpAddr) -> anyhow::Result<Resolved> {
        // Fail closed: `header` is a default only where no hosting platform is in sight.
        let mode = self.mode.unwrap_or(if self.platform.hosted() {
            AuthMode::EasyAuth
        } else {
            AuthMode::Header
        });
        match mode {
            AuthMode::Header => {
                let explicit = self.mode.is_some();
                anyhow::ensure!(
                    explicit || bind.is_loopback(),
                    "refusing to serve on {bind} with BLOG_AUTH defaulted to `header`: that mode \
                     trusts the x-ms-client-principal-id header as sent, so anyone who can reach \
                     the server could act as any user. Bind to 127.0.0.1, or choose BLOG_AUTH=jwt \
                     (or BLOG_AUTH=header explicitly, if something in front of the server sets \
                     that header)"
                );
                Ok(Resolved::Header { explicit })
            }
            AuthMode::EasyAuth => Ok(Resolved::EasyAuth {
                enabled: self.platform.easy_auth_enabled(),
            }),
            AuthMode::Jwt => self.jwt_config().map(Resolved::Jwt),
        }
    }
}

impl AuthSettings {
    /// The `jwt` mode's settings, checked: all three given, and a key set URL that is safe.
    fn jwt_config(&self) -> anyhow::Result<JwtConfig> {
        let given = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let (jwks, issuer, audience) = (
            given(&self.jwt_jwks),
            given(&self.jwt_issuer),
            given(&self.jwt_audience),
        );
        let missing: Vec<&str> = [
            ("BLOG_JWT_JWKS", jwks.is_none()),
            ("BLOG_JWT_ISSUER", issuer.is_none()),
            ("BLOG_JWT_AUDIENCE", audience.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, missing)| missing.then_some(name))
        .collect();
        let (Some(jwks), Some(issuer), Some(audience)) = (jwks, issuer, audience) else {
            anyhow::bail!(
                "BLOG_AUTH=jwt needs {} (the key set, the token issuer and the audience)",
                missing.join(", ")
            );
        };
        Ok(JwtConfig {
            jwks: KeySource::parse(&jwks)?,
            issuer,
            audience,
            claim: given(&self.jwt_claim).unwrap_or_else(|| DEFAULT_CLAIM.to_owned()),
        })
    }
}
