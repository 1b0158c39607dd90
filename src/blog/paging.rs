//! Paging parameters of the list operations: a bounded page size and an opaque continuation
//! token. The token wraps the store's own continuation together with the list it belongs
//! to, signed with the server's key, so a token from one list is refused by another, and a
//! token the server did not issue by every list, instead of reaching the store.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::domain::ValidationError;
use crate::error::Error;
use crate::signing::{Purpose, SIGNATURE_BYTES, ServerKey};

/// 1–100 items, 50 unless the caller asks otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    pub const DEFAULT: PageSize = PageSize(50);
    pub const MAX: PageSize = PageSize(100);

    pub fn parse(requested: Option<u32>, default: PageSize) -> Result<Self, ValidationError> {
        match requested {
            None => Ok(default),
            Some(n) if (1..=Self::MAX.0).contains(&n) => Ok(PageSize(n)),
            Some(n) => Err(ValidationError::new(
                "limit",
                format!("must be between 1 and {}, not {n}", Self::MAX.0),
            )),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Which page of a list to read: how many items, and the continuation token of the page
/// before it (`None`: the first page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListRequest<'a> {
    pub size: PageSize,
    pub continuation: Option<&'a str>,
}

impl<'a> ListRequest<'a> {
    pub fn new(size: PageSize, continuation: Option<&'a str>) -> Self {
        Self { size, continuation }
    }

    /// The first page, of `size` items.
    pub fn first(size: PageSize) -> Self {
        Self::new(size, None)
    }

    pub fn is_first(&self) -> bool {
        self.continuation.is_none()
    }
}

/// Wraps a store continuation for `list` (e.g. `"comments:<post-id>"`), signed with the
/// server's `key`: the list and the store's position, as JSON, then their signature, all in
/// base64url. The store's continuation is the store's own business: no client may make one
/// up, nor edit one (a date, a quote) to see what the store makes of it.
pub fn encode_continuation(key: &ServerKey, list: &str, store_token: &str) -> String {
    let payload = serde_json::json!([list, store_token])
        .to_string()
        .into_bytes();
    let signature = key.sign(Purpose::Continuation, &payload);
    URL_SAFE_NO_PAD.encode([payload.as_slice(), &signature].concat())
}

/// Unwraps a continuation made by [`encode_continuation`] with the same `key` for the same
/// `list`: signed by the key, or refused, whatever it holds (so a server given a new key
/// refuses the tokens it signed with the old one).
pub fn decode_continuation(key: &ServerKey, list: &str, token: &str) -> Result<String, Error> {
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| Error::InvalidContinuation)?;
    let at = bytes
        .len()
        .checked_sub(SIGNATURE_BYTES)
        .ok_or(Error::InvalidContinuation)?;
    let (payload, signature) = bytes.split_at(at);
    if !key.verifies(Purpose::Continuation, payload, signature) {
        return Err(Error::InvalidContinuation);
    }
    let (owner, store_token): (String, String) =
        serde_json::from_slice(payload).map_err(|_| Error::InvalidContinuation)?;
    if owner != list {
        return Err(Error::InvalidContinuation);
    }
    Ok(store_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_bounded() {
        assert_eq!(PageSize::parse(None, PageSize::DEFAULT).unwrap().get(), 50);
        assert_eq!(
            PageSize::parse(Some(100), PageSize::DEFAULT).unwrap().get(),
            100
        );
        assert!(PageSize::parse(Some(0), PageSize::DEFAULT).is_err());
        assert!(PageSize::parse(Some(101), PageSize::DEFAULT).is_err());
    }

    #[test]
    fn continuation_round_trips_signed_for_its_own_list_only() {
        let key = ServerKey::drawn();
        let token = encode_continuation(&key, "likes:p1", "store-token");
        assert_eq!(
            decode_continuation(&key, "likes:p1", &token).unwrap(),
            "store-token"
        );
        assert!(decode_continuation(&key, "likes:p2", &token).is_err());
        assert!(decode_continuation(&ServerKey::drawn(), "likes:p1", &token).is_err());
        assert!(decode_continuation(&key, "likes:p1", "%%%").is_err());
        assert!(decode_continuation(&key, "likes:p1", "bm90IGpzb24").is_err());
        assert!(decode_continuation(&key, "likes:p1", "").is_err());
        // Unsigned, as tokens were once: refused.
        let unsigned = URL_SAFE_NO_PAD.encode(r#"["likes:p1","store-token"]"#);
        assert!(decode_continuation(&key, "likes:p1", &unsigned).is_err());
        // Any byte changed, in the position or in the signature: refused.
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for at in [2, bytes.len() - 1] {
            let mut edited = bytes.clone();
            edited[at] ^= 1;
            let edited = URL_SAFE_NO_PAD.encode(edited);
            assert!(decode_continuation(&key, "likes:p1", &edited).is_err());
        }
        assert!(decode_continuation(&key, "likes:p1", &format!(" {token}")).is_err());
    }
}
