//! Azure connection strings, the Storage account's and Cosmos DB's alike: `name=value` pairs
//! separated by `;`, names in any case and order.

use std::collections::HashMap;

/// The pairs of `connection` by name in lower case, values trimmed (a later pair of a name
/// wins). `what` names the setting in the error, which never echoes the string: it holds a
/// secret.
pub fn fields(connection: &str, what: &str) -> anyhow::Result<HashMap<String, String>> {
    let mut fields = HashMap::new();
    for part in connection
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        // Keys and signatures are base64 and may end with '=': split at the first '=' only.
        let Some((name, value)) = part.split_once('=') else {
            anyhow::bail!("malformed {what}: expected name=value pairs");
        };
        fields.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_folded_values_trimmed_and_a_trailing_equals_sign_kept() {
        let fields = fields(" AccountEndpoint=https://a/ ; AccountKey=a2V5== ;", "it").unwrap();
        assert_eq!(fields["accountendpoint"], "https://a/");
        assert_eq!(fields["accountkey"], "a2V5==");
    }

    #[test]
    fn a_part_without_equals_sign_is_refused_without_echoing_it() {
        let refused = fields("AccountKey", "the setting").unwrap_err().to_string();
        assert_eq!(refused, "malformed the setting: expected name=value pairs");
    }
}
