//! The multi-tenant data set of `--tenants N`: `--users` users split over N tenants by a
//! Zipf law, so that a few tenants are large and many are small, each tenant's posts,
//! comments and likes drawn as the single data set draws them (see `generate`), among the
//! tenant's own users.
//!
//! The same data loads into either layout: user ids are unique across tenants
//! (`user-000123`) and post ids are UUIDs, so a `single` store holds every tenant's items
//! side by side as one blog, and a `multi` store holds each tenant's under its own key
//! prefix (written through the tenant's view, which stamps `tenantId`). Each tenant draws
//! from its own seeded generator, so loading twice gives the same items.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::domain::{TenantId, UserId};
use cosmos_blog::store::{Store, Tenancy, tenant};

use crate::generate::{PostRef, plan_posts, progress_bar, write_users_and_posts, writers};

/// The skew rule, as the report states it.
pub const SKEW_RULE: &str = "tenant k of N (k = 1 the largest) gets 1 user plus a share of the other users − N proportional to 1/k (Zipf, exponent 1), rounded by largest remainder";

#[derive(Debug, Clone)]
pub struct TenantsConfig {
    pub users: usize,
    pub tenants: usize,
    pub seed: u64,
    pub progress: bool,
}

/// Users per tenant, largest first: see [`SKEW_RULE`].
pub fn shares(users: usize, tenants: usize) -> anyhow::Result<Vec<usize>> {
    anyhow::ensure!(tenants > 0, "--tenants must be at least 1");
    anyhow::ensure!(
        users >= tenants,
        "--tenants {tenants} needs at least as many users (--users {users}): a tenant exists once it has a user"
    );
    let rest = (users - tenants) as f64;
    let harmonic: f64 = (1..=tenants).map(|k| 1.0 / k as f64).sum();
    let quotas: Vec<f64> = (1..=tenants)
        .map(|k| rest / (k as f64 * harmonic))
        .collect();
    let mut shares: Vec<usize> = quotas.iter().map(|q| 1 + q.floor() as usize).collect();
    let mut by_remainder: Vec<usize> = (0..tenants).collect();
    by_remainder.sort_by(|&a, &b| {
        let remainder = |i: usize| quotas[i] - quotas[i].floor();
        remainder(b).total_cmp(&remainder(a)).then(a.cmp(&b))
    });
    let missing = users - shares.iter().sum::<usize>();
    for &i in by_remainder.iter().take(missing) {
        shares[i] += 1;
    }
    shares.sort_unstable_by(|a, b| b.cmp(a));
    Ok(shares)
}

/// One tenant of the data set.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantData {
    pub id: TenantId,
    pub users: Vec<UserId>,
    pub posts: Vec<PostRef>,
}

#[derive(Debug, Clone)]
pub struct TenantsData {
    /// Largest first.
    pub tenants: Vec<TenantData>,
    pub comments: usize,
    pub likes: usize,
    pub load_time: Duration,
    pub rebuild_time: Duration,
}

impl TenantsData {
    pub fn users(&self) -> usize {
        self.tenants.iter().map(|t| t.users.len()).sum()
    }

    pub fn posts(&self) -> usize {
        self.tenants.iter().map(|t| t.posts.len()).sum()
    }

    pub fn items(&self) -> usize {
        self.users() + self.posts() + self.comments + self.likes
    }

    /// Whether `other` holds the same tenants, users and posts (another layout's load).
    pub fn same_data(&self, other: &TenantsData) -> bool {
        self.tenants == other.tenants
            && (self.comments, self.likes) == (other.comments, other.likes)
    }
}

fn tenant_id(rank: usize, tenants: usize) -> anyhow::Result<TenantId> {
    let width = tenants.to_string().len().max(3);
    Ok(TenantId::parse(&format!("tenant-{rank:0width$}"))?)
}

/// Each tenant's own generator, so that its data does not depend on the others'.
fn tenant_rng(seed: u64, rank: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(seed ^ (rank as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Loads the data set into `store`, in its layout, then derives the copies with `rebuild`
/// (reading a `multi` store once, like a `single` one).
pub async fn load(store: &Arc<dyn Store>, config: &TenantsConfig) -> anyhow::Result<TenantsData> {
    let sizes = shares(config.users, config.tenants)?;
    let started = Instant::now();
    let bar = progress_bar(config.progress, config.users, "loading");
    let mut tenants = Vec::with_capacity(sizes.len());
    let (mut comments, mut likes) = (0, 0);
    let mut first_user = 0;
    for (index, &size) in sizes.iter().enumerate() {
        let rank = index + 1;
        let id = tenant_id(rank, sizes.len())?;
        let target = match store.tenancy() {
            Tenancy::Single => Arc::clone(store),
            Tenancy::Multi => tenant::scoped(store, &id),
        };
        let users = writers(first_user..first_user + size)?;
        first_user += size;
        let mut rng = tenant_rng(config.seed, rank);
        let partitions = plan_posts(&mut rng, &users)?;
        let posts: Vec<PostRef> = partitions.iter().map(|(p, _)| p.clone()).collect();
        comments += posts.iter().map(|p| p.comments).sum::<usize>();
        likes += posts.iter().map(|p| p.likes).sum::<usize>();

        write_users_and_posts(&target, &users, partitions, || {})
            .await
            .with_context(|| format!("loading tenant {id}"))?;
        bar.inc(size as u64);
        tenants.push(TenantData {
            id,
            users: users.into_iter().map(|u| u.user_id).collect(),
            posts,
        });
    }
    bar.finish_and_clear();
    let load_time = started.elapsed();

    let started = Instant::now();
    cosmos_blog::copies::rebuild(store)
        .await
        .context("rebuilding the copies")?;
    Ok(TenantsData {
        tenants,
        comments,
        likes,
        load_time,
        rebuild_time: started.elapsed(),
    })
}
