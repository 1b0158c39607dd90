//! The feed under a storm of deletes: round after round on one application, deletes of posts
//! in the feed, the erasure of an account with posts in the feed, new posts and comments on
//! posts just past the feed go out at once. Once the pump has handled every change of a round,
//! one `verify` must hold at once: the handlers keep the feed to the 100 most recent posts by
//! themselves, with no later repair (the delayed re-check is off in tests, and verify is not
//! polled until it passes).
//!
//! A comment changes its post's counts, so the post is delivered again: past the feed, it
//! must stay out of it even when a delete in the same batch made room, unless it is the most
//! recent of those left out. Each delete goes out together with such a comment, and an
//! erasure deletes the account's posts in the feed and then its comments on posts past it.
//!
//! The seed is printed; `FEED_STORM_SEED=<seed> cargo test --test api feed_storm` replays the
//! same choices (the interleaving itself depends on timing).

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::blog::stored_feed;
use cosmos_blog::changefeed::backlog;
use cosmos_blog::store::Store;
use cosmos_blog::verify::verify;
use futures::future::join_all;
use reqwest::StatusCode;

use crate::deletes::feed_ids;
use testkit::{Backend, TestApp, eventually, ids, on_every_backend};

on_every_backend!(the_feed_converges_under_deletes_erasures_and_new_posts);

/// Authors that keep writing throughout; one more account per round writes and is erased in
/// the next round.
const AUTHORS: usize = 3;
/// Posts before the first round: past the feed's bound, so that every delete refills it.
const FIRST_POSTS: usize = 110;
/// Posts of the feed deleted in a round, each together with a comment on a post past the feed.
const DELETES: usize = 3;
/// How far apart the deletes of a round go out: each lands while the pump handles the one
/// before, so that it and its comment meet in one batch more often than not.
const PULSE_MS: u64 = 5;
/// Posts the account erased in the next round writes (the newest, so in the feed), and posts
/// past the feed it comments on (whose counts its erasure lowers).
const DOOMED_POSTS: usize = 3;
const DOOMED_COMMENTS: usize = 3;
/// New posts of a round by the authors who stay: as many as are deleted, so that posts past
/// the feed remain.
const NEW_POSTS: usize = DELETES;
/// The posts past the feed that comments go to: the most recent of them.
const PAST_THE_FEED: usize = 20;

fn seed() -> u64 {
    std::env::var("FEED_STORM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

/// Rounds on one application. The emulator's pump finds changes by polling, every half
/// second, and a round's erasure takes both handlers in turn: fewer rounds there keep the
/// test as short as on the embedded store, whose pump is woken by each commit.
fn rounds(backend: Backend) -> usize {
    match backend {
        Backend::Embedded => 50,
        Backend::Cosmos => 12,
    }
}

/// Posts of the authors who stay, oldest first: (id, author).
type Posts = Vec<(String, String)>;

async fn the_feed_converges_under_deletes_erasures_and_new_posts(backend: Backend) {
    let seed = seed();
    eprintln!("feed storm seed {seed} (FEED_STORM_SEED={seed} replays its choices)");
    let mut rng = fastrand::Rng::with_seed(seed);
    let app = TestApp::spawn(backend).start().await;
    let authors: Vec<String> = (0..AUTHORS).map(|n| format!("author-{n}")).collect();
    for author in &authors {
        app.register(author, author).await;
    }
    let mut posts: Posts = Vec::new();
    for n in 0..FIRST_POSTS {
        let author = &authors[n % AUTHORS];
        posts.push((
            new_post(&app, author, &format!("first {n}")).await,
            author.clone(),
        ));
    }
    settled(&app).await;

    let mut doomed: Option<String> = None;
    for round in 0..rounds(backend) {
        let feed = stored_feed_ids(&app).await;
        let (mut in_feed, past): (Posts, Posts) =
            posts.iter().cloned().partition(|(id, _)| feed.contains(id));
        let past = &past[past.len().saturating_sub(PAST_THE_FEED)..];
        assert!(
            !past.is_empty() && in_feed.len() >= DELETES,
            "round {round}"
        );
        rng.shuffle(&mut in_feed);
        in_feed.truncate(DELETES);
        posts.retain(|post| !in_feed.contains(post));

        // Each request's pause is drawn here, in order, so that the choices follow from the
        // seed alone.
        let deletes: Vec<_> = in_feed
            .into_iter()
            .enumerate()
            .map(|(n, (post, author))| {
                let pause = n as u64 * PULSE_MS + rng.u64(..PULSE_MS);
                let commenter = authors[rng.usize(..AUTHORS)].clone();
                let (commented, _) = past[rng.usize(..past.len())].clone();
                let app = &app;
                async move {
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    let path = format!("/api/posts/{post}");
                    let (deleted, _) = tokio::join!(
                        app.delete_as(&author, &path),
                        app.commented(&commenter, &commented, "past the feed"),
                    );
                    assert_eq!(deleted.status(), StatusCode::NO_CONTENT, "delete {post}");
                }
            })
            .collect();
        let erasure = {
            let pause = rng.u64(..DELETES as u64 * PULSE_MS);
            let (app, doomed) = (&app, doomed.take());
            async move {
                let Some(doomed) = doomed else { return };
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let path = format!("/api/users/{doomed}");
                let status = app.delete_as(&doomed, &path).await.status();
                assert_eq!(status, StatusCode::ACCEPTED, "erase {doomed}");
            }
        };
        let new_posts: Vec<_> = (0..NEW_POSTS)
            .map(|n| {
                let pause = rng.u64(..DELETES as u64 * PULSE_MS);
                let (app, author) = (&app, authors[rng.usize(..AUTHORS)].clone());
                async move {
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    let id = new_post(app, &author, &format!("round {round} post {n}")).await;
                    (id, author)
                }
            })
            .collect();
        let next_doomed = format!("doomed-{round}");
        let doomed_comments: Vec<String> = (0..DOOMED_COMMENTS)
            .map(|_| past[rng.usize(..past.len())].0.clone())
            .collect();
        let next = async {
            app.register(&next_doomed, &next_doomed).await;
            for n in 0..DOOMED_POSTS {
                new_post(&app, &next_doomed, &format!("doomed {round} {n}")).await;
            }
            for post in &doomed_comments {
                app.commented(&next_doomed, post, "soon gone").await;
            }
        };
        let (_, (), written, ()) =
            tokio::join!(join_all(deletes), erasure, join_all(new_posts), next);
        posts.extend(written);
        doomed = Some(next_doomed);

        settled(&app).await;
        let report = verify(&app.whole_store)
            .await
            .expect("the store can be scanned");
        assert!(
            report.holds(),
            "round {round} (seed {seed}): verify fails once the pump has settled:\n{}\n{}",
            report.violation_lines(100).join("\n"),
            report.verdict()
        );
    }
    assert_eq!(feed_ids(&app).await.len(), 100, "the feed is full");
}

/// The ids of the feed as stored (Q6 may answer from its cache a moment longer).
async fn stored_feed_ids(app: &TestApp) -> Vec<String> {
    let feed = stored_feed(&*app.store).await.expect("the feed reads");
    ids(&feed)
}

async fn new_post(app: &TestApp, author: &str, title: &str) -> String {
    let post = app.new_post(author, title, "x").await;
    post["id"].as_str().expect("post id").to_owned()
}

/// Waits until the pump has handled every change: none is left after its checkpoints. The
/// backlog reads `users` before `posts`: nothing pending in `users` means no erasure is under
/// way (its batch is checkpointed after its tombstones are written), and nothing pending in
/// `posts` after that means every tombstone and post has been handled; the copies the `posts`
/// handler writes into `users` meanwhile are nothing the `users` handler acts on. Two such
/// readings in a row, to leave no doubt.
async fn settled(app: &TestApp) {
    let store: &Arc<dyn Store> = &app.whole_store;
    let caught_up = || async {
        let behind = backlog(store).await.ok()?;
        behind
            .pending
            .iter()
            .all(|(_, pending)| *pending == Some(0))
            .then_some(())
    };
    eventually(Duration::from_secs(60), || async {
        caught_up().await?;
        caught_up().await
    })
    .await;
}
