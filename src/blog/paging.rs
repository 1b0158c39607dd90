//! Paging parameters of the list operations: a bounded page size and an opaque continuation
//! token. The token wraps the store's own continuation together with the list it belongs
//! to, so a token from one list is refused by another instead of confusing the store.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::domain::ValidationError;
use crate::error::Error;

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

/// Wraps a store continuation for `list` (e.g. `"comments:<post-id>"`).
pub fn encode_continuation(list: &str, store_token: &str) -> String {
    let payload = serde_json::json!([list, store_token]).to_string();
    URL_SAFE_NO_PAD.encode(payload)
}

/// Unwraps a continuation made by [`encode_continuation`] for the same `list`: exactly as it
/// was issued (its bytes are what encoding its content gives again), or refused. The store
/// then checks every field of its own token (it refuses a position it could not have issued).
pub fn decode_continuation(list: &str, token: &str) -> Result<String, Error> {
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| Error::InvalidContinuation)?;
    let (owner, store_token): (String, String) =
        serde_json::from_slice(&bytes).map_err(|_| Error::InvalidContinuation)?;
    if owner != list || encode_continuation(&owner, &store_token) != token {
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
    fn continuation_round_trips_for_its_own_list_only() {
        let token = encode_continuation("likes:p1", "store-token");
        assert_eq!(
            decode_continuation("likes:p1", &token).unwrap(),
            "store-token"
        );
        assert!(decode_continuation("likes:p2", &token).is_err());
        assert!(decode_continuation("likes:p1", "%%%").is_err());
        assert!(decode_continuation("likes:p1", "bm90IGpzb24").is_err());
        // The same content spelled otherwise (spaces in its JSON) was not issued.
        let respelled = URL_SAFE_NO_PAD.encode(r#"[ "likes:p1", "store-token" ]"#);
        assert!(decode_continuation("likes:p1", &respelled).is_err());
        assert!(decode_continuation("likes:p1", &format!(" {token}")).is_err());
    }
}
