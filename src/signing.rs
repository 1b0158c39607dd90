//! The server's key: the one secret that signs what the server hands out and must recognise
//! when it comes back (the forms' CSRF tokens, the lists' continuation tokens). It comes from
//! the settings (`BLOG_CSRF_KEY`, or the file beside the embedded store), so that every
//! instance, and the same server after a restart, takes what another signed. Each use signs
//! under its own purpose, so that a signature made for one is never taken for another.

use std::sync::Arc;

use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};

/// What a signature is for: its name goes into every signature made for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A form's CSRF token (signed double submit).
    FormToken,
    /// A list's continuation token.
    Continuation,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::FormToken => b"form-token",
            Purpose::Continuation => b"continuation",
        }
    }
}

/// The bytes of an HMAC-SHA256 signature.
pub const SIGNATURE_BYTES: usize = 32;

/// The server's key (HMAC-SHA256).
#[derive(Clone)]
pub struct ServerKey(Arc<hmac::Key>);

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerKey(…)")
    }
}

impl ServerKey {
    pub fn from_secret(secret: &[u8]) -> Self {
        Self(Arc::new(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }

    /// A key of this process alone: what it signs is refused by any other process.
    pub fn drawn() -> Self {
        Self::from_secret(&random_secret())
    }

    /// The signature of `message` for `purpose`.
    pub fn sign(&self, purpose: Purpose, message: &[u8]) -> [u8; SIGNATURE_BYTES] {
        let mut context = hmac::Context::with_key(&self.0);
        context.update(purpose.label());
        // The label ends where the message begins: no label is a prefix of another's bytes.
        context.update(&[0]);
        context.update(message);
        let mut signature = [0u8; SIGNATURE_BYTES];
        signature.copy_from_slice(context.sign().as_ref());
        signature
    }

    /// Whether `signature` is this key's for `message` and `purpose` (compared in constant
    /// time).
    pub fn verifies(&self, purpose: Purpose, message: &[u8], signature: &[u8]) -> bool {
        let expected = self.sign(purpose, message);
        signature.len() == SIGNATURE_BYTES
            && aws_lc_rs::constant_time::verify_slices_are_equal(&expected, signature).is_ok()
    }
}

/// 32 random bytes: a new key's secret.
pub fn random_secret() -> [u8; 32] {
    let mut drawn = [0u8; 32];
    // The system's generator failing is a broken machine: a zero key would still be unknown
    // to other sites' pages and to clients, which is all a signature here has to be.
    let _ = SystemRandom::new().fill(&mut drawn);
    drawn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_holds_for_its_key_message_and_purpose_only() {
        let key = ServerKey::from_secret(b"a secret long enough to be one, for the test");
        let signature = key.sign(Purpose::Continuation, b"page 2");
        assert!(key.verifies(Purpose::Continuation, b"page 2", &signature));
        assert!(!key.verifies(Purpose::Continuation, b"page 3", &signature));
        assert!(!key.verifies(Purpose::FormToken, b"page 2", &signature));
        assert!(!key.verifies(Purpose::Continuation, b"page 2", &signature[1..]));
        let same = ServerKey::from_secret(b"a secret long enough to be one, for the test");
        assert!(same.verifies(Purpose::Continuation, b"page 2", &signature));
        assert!(!ServerKey::drawn().verifies(Purpose::Continuation, b"page 2", &signature));
    }
}
