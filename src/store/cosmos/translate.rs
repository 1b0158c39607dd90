//! Translation between the store's types and the SDK's: partition keys, etags and
//! preconditions, queries and their scopes, page sizes, and the change feed's items.

use azure_core::http::Etag;
use azure_data_cosmos::feed::FeedScope;
use azure_data_cosmos::models::ChangeFeedItem;
use azure_data_cosmos::options::{ItemWriteOptions, MaxItemCountHint, Precondition};
use serde_json::Value;

use crate::store::{
    ETag, PartitionKey, PartitionKeyValue, Query, QueryScope, StoreError, StoreResult,
};

/// The service caps a page at this many items whatever the caller asks.
pub(super) const MAX_PAGE_ITEMS: u32 = 1_000;

pub(super) fn sdk_partition_key(pk: &PartitionKey) -> StoreResult<azure_data_cosmos::PartitionKey> {
    use azure_data_cosmos::models::PartitionKeyValue as SdkValue;
    let values = pk
        .values()
        .iter()
        .map(|value| match value {
            PartitionKeyValue::String(s) => Ok(SdkValue::from(s.clone())),
            PartitionKeyValue::Bool(b) => Ok(SdkValue::from(*b)),
            PartitionKeyValue::Null => Ok(azure_data_cosmos::PartitionKey::NULL),
            PartitionKeyValue::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Ok(SdkValue::from(i)),
                (None, Some(u)) => Ok(SdkValue::from(u)),
                _ => SdkValue::try_from(n.as_f64().unwrap_or(f64::NAN))
                    .map_err(|e| StoreError::BadRequest(format!("partition key: {e}"))),
            },
        })
        .collect::<StoreResult<Vec<_>>>()?;
    azure_data_cosmos::PartitionKey::try_from(values)
        .map_err(|e| StoreError::BadRequest(format!("partition key: {e}")))
}

pub(super) fn if_match(etag: &ETag) -> Precondition {
    Precondition::IfMatch(Etag::from(etag.0.clone()))
}

pub(super) fn etag_from(etag: Option<&Etag>) -> StoreResult<ETag> {
    etag.map(|e| ETag(e.to_string()))
        .ok_or_else(|| StoreError::Internal("the service returned no etag".into()))
}

pub(super) fn write_options(precondition: Option<Precondition>) -> Option<ItemWriteOptions> {
    precondition.map(|p| ItemWriteOptions::default().with_precondition(p))
}

pub(super) fn max_item_count(max_items: u32) -> MaxItemCountHint {
    let bounded = max_items.clamp(1, MAX_PAGE_ITEMS);
    std::num::NonZeroU32::new(bounded)
        .map(MaxItemCountHint::Limit)
        .unwrap_or(MaxItemCountHint::ServerDecides)
}

pub(super) fn build_query(query: &Query) -> StoreResult<azure_data_cosmos::Query> {
    let (sql, params) = query.to_cosmos_sql();
    params
        .into_iter()
        .try_fold(azure_data_cosmos::Query::from(sql), |q, (name, value)| {
            q.with_parameter(name, value)
        })
        .map_err(|e| StoreError::BadRequest(format!("query parameter: {e}")))
}

pub(super) fn scope_of(query: &Query) -> StoreResult<FeedScope> {
    Ok(match &query.scope {
        QueryScope::Partition(pk) => FeedScope::partition(sdk_partition_key(pk)?),
        QueryScope::CrossPartition => FeedScope::full_container(),
        // The SDK bounds a partial hierarchical key to its effective-partition-key range.
        QueryScope::Prefix(prefix) => FeedScope::partition(sdk_partition_key(prefix)?),
    })
}

/// The item of a change, carrying its `_lsn` as the service's flat change feed does (the
/// structured format moves it into the change's metadata).
pub(super) fn with_lsn(change: ChangeFeedItem<Value>) -> Option<Value> {
    let lsn = change
        .metadata()
        .and_then(|m| m.lsn())
        .map(|lsn| lsn.value());
    let mut item = change.current().cloned()?;
    if let (Value::Object(fields), Some(lsn)) = (&mut item, lsn) {
        fields.entry("_lsn").or_insert_with(|| Value::from(lsn));
    }
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_single_and_hierarchical_partition_keys() {
        assert_eq!(
            sdk_partition_key(&PartitionKey::single("a")).unwrap(),
            azure_data_cosmos::PartitionKey::from("a")
        );
        let key = PartitionKey::hierarchical(vec![
            PartitionKeyValue::String("tenant".into()),
            PartitionKeyValue::Number(7.into()),
            PartitionKeyValue::Bool(true),
        ])
        .unwrap();
        assert_eq!(sdk_partition_key(&key).unwrap().len(), 3);
    }
}
