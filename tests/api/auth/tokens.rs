//! Keys generated for the test run (RSA 2048 and EC P-256, with aws-lc-rs), their JWKS, and
//! tokens minted by hand, so that the tests can also forge what no library would sign
//! (`alg: none`, HMAC with a public key, a tampered payload).

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::encoding::{AsBigEndian, EcPublicKeyUncompressedBin};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RSA_PKCS1_SHA512,
    RsaEncoding, RsaKeyPair,
};
use aws_lc_rs::{hmac, rand};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

pub const ISSUER: &str = "https://login.example.test/tenant/v2.0";
pub const AUDIENCE: &str = "api://cosmos-blog-tests";
pub const RSA_KID: &str = "rsa-1";
pub const EC_KID: &str = "ec-1";

pub struct Keys {
    pub rsa: RsaKeyPair,
    pub ec: EcdsaKeyPair,
    /// Not in the JWKS: signs forgeries.
    pub intruder: RsaKeyPair,
}

/// Generated once per test run (RSA key generation is slow in debug builds).
pub fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        rsa: RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key"),
        ec: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key"),
        intruder: RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key"),
    })
}

pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn rsa_jwk(key: &RsaKeyPair, kid: &str) -> Value {
    let public = key.public_key();
    json!({
        "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
        "n": b64(public.modulus().big_endian_without_leading_zero()),
        "e": b64(public.exponent().big_endian_without_leading_zero()),
    })
}

/// Without `alg`, as many identity providers publish them.
pub fn ec_jwk(key: &EcdsaKeyPair, kid: &str) -> Value {
    let point = AsBigEndian::<EcPublicKeyUncompressedBin>::as_be_bytes(key.public_key())
        .expect("public point");
    let point = point.as_ref();
    assert_eq!(point.len(), 65, "uncompressed P-256 point");
    json!({
        "kty": "EC", "use": "sig", "crv": "P-256", "kid": kid,
        "x": b64(&point[1..33]), "y": b64(&point[33..65]),
    })
}

/// The JWKS of the test's identity provider: its RSA and EC keys, plus an encryption key
/// that must be ignored.
pub fn jwks() -> Value {
    let keys = keys();
    let mut encryption = rsa_jwk(&keys.intruder, "enc-1");
    encryption["use"] = json!("enc");
    encryption["alg"] = json!("RSA-OAEP");
    json!({"keys": [rsa_jwk(&keys.rsa, RSA_KID), ec_jwk(&keys.ec, EC_KID), encryption]})
}

pub fn now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(since_epoch.as_secs()).expect("seconds fit")
}

/// Claims of a valid token for `sub`, good for ten minutes.
pub fn claims(sub: &str) -> Value {
    let now = now();
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "nbf": now - 5, "exp": now + 600})
}

pub enum Signer<'a> {
    Rsa(&'a RsaKeyPair, &'static dyn RsaEncoding),
    Ec(&'a EcdsaKeyPair),
    Hmac(&'a [u8]),
    Unsigned,
}

pub fn mint(header: &Value, claims: &Value, signer: Signer<'_>) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = match signer {
        Signer::Rsa(key, encoding) => {
            let mut signature = vec![0; key.public_modulus_len()];
            key.sign(
                encoding,
                &SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .expect("RSA signature");
            signature
        }
        Signer::Ec(key) => key
            .sign(&rand::SystemRandom::new(), message.as_bytes())
            .expect("EC signature")
            .as_ref()
            .to_vec(),
        Signer::Hmac(secret) => {
            let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
            hmac::sign(&key, message.as_bytes()).as_ref().to_vec()
        }
        Signer::Unsigned => Vec::new(),
    };
    format!("{message}.{}", b64(&signature))
}

pub fn rs256(claims: &Value) -> String {
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": RSA_KID});
    mint(&header, claims, Signer::Rsa(&keys().rsa, &RSA_PKCS1_SHA256))
}

pub fn es256(claims: &Value) -> String {
    let header = json!({"alg": "ES256", "typ": "JWT", "kid": EC_KID});
    mint(&header, claims, Signer::Ec(&keys().ec))
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Tokens that must all be refused as `invalid_token`, each with what is wrong with it. Each
/// names `ada` (an existing user) as its caller, so a wrongly accepted one would write.
pub fn invalid_tokens() -> Vec<(&'static str, String)> {
    let keys = keys();
    let valid = claims("ada");
    let with = |field: &str, value: Value| {
        let mut claims = valid.clone();
        claims[field] = value;
        claims
    };
    let without = |field: &str| {
        let mut claims = valid.clone();
        claims.as_object_mut().expect("object").remove(field);
        claims
    };
    let rsa_header = json!({"alg": "RS256", "typ": "JWT", "kid": RSA_KID});
    let forged_payload = {
        let genuine = rs256(&claims("someone-else"));
        let parts: Vec<&str> = genuine.split('.').collect();
        let payload = b64(valid.to_string().as_bytes());
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let public_key_as_secret = keys.rsa.public_key().as_ref().to_vec();
    vec![
        ("expired", rs256(&with("exp", json!(now() - 3600)))),
        ("expired, ES256", es256(&with("exp", json!(now() - 3600)))),
        ("not yet valid", rs256(&with("nbf", json!(now() + 3600)))),
        (
            "wrong audience",
            rs256(&with("aud", json!("api://another-app"))),
        ),
        (
            "wrong issuer",
            rs256(&with("iss", json!("https://evil.example.test"))),
        ),
        ("no audience", rs256(&without("aud"))),
        ("no issuer", rs256(&without("iss"))),
        ("no expiry", rs256(&without("exp"))),
        (
            "signed by another key under our kid",
            mint(
                &rsa_header,
                &valid,
                Signer::Rsa(&keys.intruder, &RSA_PKCS1_SHA256),
            ),
        ),
        (
            "signed by a key of its own",
            mint(
                &json!({"alg": "RS256", "typ": "JWT", "kid": "intruder"}),
                &valid,
                Signer::Rsa(&keys.intruder, &RSA_PKCS1_SHA256),
            ),
        ),
        ("payload swapped under a genuine signature", forged_payload),
        (
            "alg none",
            mint(
                &json!({"alg": "none", "typ": "JWT"}),
                &valid,
                Signer::Unsigned,
            ),
        ),
        (
            "alg none with our kid",
            mint(
                &json!({"alg": "none", "typ": "JWT", "kid": RSA_KID}),
                &valid,
                Signer::Unsigned,
            ),
        ),
        (
            "HS256 keyed with our public key",
            mint(
                &json!({"alg": "HS256", "typ": "JWT", "kid": RSA_KID}),
                &valid,
                Signer::Hmac(&public_key_as_secret),
            ),
        ),
        (
            "HS256 with a shared secret",
            mint(
                &json!({"alg": "HS256", "typ": "JWT"}),
                &valid,
                Signer::Hmac(b"a shared secret"),
            ),
        ),
        (
            "RS512: a good signature with an algorithm we do not accept",
            mint(
                &json!({"alg": "RS512", "typ": "JWT", "kid": RSA_KID}),
                &valid,
                Signer::Rsa(&keys.rsa, &RSA_PKCS1_SHA512),
            ),
        ),
        (
            "ES256 header on the RSA key",
            mint(
                &json!({"alg": "ES256", "typ": "JWT", "kid": RSA_KID}),
                &valid,
                Signer::Ec(&keys.ec),
            ),
        ),
        (
            "caller id is not a valid user id",
            rs256(&with("sub", json!("a/b"))),
        ),
        ("caller id is not a string", rs256(&with("sub", json!(42)))),
        ("malformed: not a JWT", "not-a-token".to_owned()),
        ("malformed: three parts of garbage", "a.b.c".to_owned()),
        (
            "malformed: two parts",
            rs256(&valid).rsplit_once('.').expect("dot").0.to_owned(),
        ),
    ]
}
