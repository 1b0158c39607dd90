//! Partition keys as Cosmos DB models them: one value per key path, up to three paths for a
//! hierarchical key; each value a string, a number, a boolean or null (an absent path).

use serde_json::Value;

pub(crate) const MAX_COMPONENTS: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub enum PartitionKeyValue {
    String(String),
    Number(serde_json::Number),
    Bool(bool),
    Null,
}

impl PartitionKeyValue {
    pub(crate) fn to_json(&self) -> Value {
        match self {
            PartitionKeyValue::String(s) => Value::String(s.clone()),
            PartitionKeyValue::Number(n) => Value::Number(n.clone()),
            PartitionKeyValue::Bool(b) => Value::Bool(*b),
            PartitionKeyValue::Null => Value::Null,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionKey(Vec<PartitionKeyValue>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionKeyError {
    #[error("a partition key has 1 to {MAX_COMPONENTS} components, not {0}")]
    Arity(usize),
    #[error("partition key path {0} holds an object or array; only scalars can be keys")]
    NotScalar(String),
    #[error("the item's partition key does not match the partition addressed")]
    Mismatch,
}

impl PartitionKey {
    pub fn single(value: impl Into<String>) -> Self {
        Self(vec![PartitionKeyValue::String(value.into())])
    }

    pub fn hierarchical(values: Vec<PartitionKeyValue>) -> Result<Self, PartitionKeyError> {
        if values.is_empty() || values.len() > MAX_COMPONENTS {
            return Err(PartitionKeyError::Arity(values.len()));
        }
        Ok(Self(values))
    }

    pub fn values(&self) -> &[PartitionKeyValue] {
        &self.0
    }

    /// Reads the key of `item` from the container's key paths (`/a` or nested `/a/b`).
    pub fn from_item(item: &Value, paths: &[&str]) -> Result<Self, PartitionKeyError> {
        let values = paths
            .iter()
            .map(|path| {
                let value = item.pointer(path).unwrap_or(&Value::Null);
                match value {
                    Value::String(s) => Ok(PartitionKeyValue::String(s.clone())),
                    Value::Number(n) => Ok(PartitionKeyValue::Number(n.clone())),
                    Value::Bool(b) => Ok(PartitionKeyValue::Bool(*b)),
                    Value::Null => Ok(PartitionKeyValue::Null),
                    _ => Err(PartitionKeyError::NotScalar((*path).to_owned())),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::hierarchical(values)
    }

    /// Checks that `item` belongs to this partition, as Cosmos DB does on every write.
    pub(crate) fn check_item(&self, item: &Value, paths: &[&str]) -> Result<(), PartitionKeyError> {
        if &Self::from_item(item, paths)? == self {
            Ok(())
        } else {
            Err(PartitionKeyError::Mismatch)
        }
    }

    /// This key with `more` components after it (a tenant's key under its tenant id).
    pub(crate) fn extended(&self, more: &PartitionKey) -> Result<Self, PartitionKeyError> {
        Self::hierarchical(self.0.iter().chain(&more.0).cloned().collect())
    }

    /// The bounds `[low, high)` of the canonical text forms ([`Self::to_json_array`]) of
    /// every longer key that starts with this one: `["t"` followed by `,` and the rest.
    /// `-` is the character after `,`, so the range holds exactly those keys.
    pub(crate) fn prefix_range(&self) -> (String, String) {
        let text = self.to_json_array();
        let open = &text[..text.len() - 1];
        (format!("{open},"), format!("{open}-"))
    }

    /// A canonical text form (a JSON array), usable as a storage key.
    pub fn to_json_array(&self) -> String {
        Value::Array(self.0.iter().map(PartitionKeyValue::to_json).collect()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_single_and_hierarchical_keys_from_items() {
        let item = json!({"id": "1", "tenant": "t", "user": {"id": 7}, "flag": true});
        assert_eq!(
            PartitionKey::from_item(&item, &["/tenant"]).unwrap(),
            PartitionKey::single("t")
        );
        let key = PartitionKey::from_item(&item, &["/tenant", "/user/id", "/flag"]).unwrap();
        assert_eq!(key.to_json_array(), r#"["t",7,true]"#);
        let missing = PartitionKey::from_item(&item, &["/nope"]).unwrap();
        assert_eq!(missing.values(), &[PartitionKeyValue::Null]);
    }

    #[test]
    fn refuses_bad_arity_and_non_scalars() {
        assert_eq!(
            PartitionKey::hierarchical(vec![]),
            Err(PartitionKeyError::Arity(0))
        );
        assert!(PartitionKey::hierarchical(vec![PartitionKeyValue::Null; 4]).is_err());
        let item = json!({"k": [1]});
        assert!(PartitionKey::from_item(&item, &["/k"]).is_err());
    }

    #[test]
    fn a_prefix_range_holds_exactly_the_keys_under_the_prefix() {
        let prefix = PartitionKey::single("t1");
        let (low, high) = prefix.prefix_range();
        let under = |key: &PartitionKey| {
            let text = key.to_json_array();
            text >= low && text < high
        };
        let child = |tenant: &str, id: &str| {
            PartitionKey::single(tenant)
                .extended(&PartitionKey::single(id))
                .unwrap()
        };
        assert!(under(&child("t1", "u")));
        assert!(under(&child("t1", "")));
        assert!(under(&child("t1", "\u{10FFFF}")));
        assert!(!under(&child("t10", "u")));
        assert!(!under(&child("t", "u")));
        assert!(!under(&child("t1\"", "u")));
        assert!(!under(&PartitionKey::single("t1")));
    }

    #[test]
    fn detects_items_written_to_the_wrong_partition() {
        let item = json!({"id": "1", "userId": "a"});
        let paths = ["/userId"];
        assert!(PartitionKey::single("a").check_item(&item, &paths).is_ok());
        assert_eq!(
            PartitionKey::single("b").check_item(&item, &paths),
            Err(PartitionKeyError::Mismatch)
        );
    }
}
