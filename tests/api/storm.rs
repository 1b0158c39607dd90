//! The storm: a randomized workload, bounded in operations, that interleaves posts,
//! edits, comments, likes and renames of many users from concurrent clients; posts carry tags,
//! and some are written or edited as drafts or scheduled a few seconds ahead. On the embedded
//! store it drives the real binary and kills it once (SIGKILL) in the middle, restarts it on
//! the same data and finishes; on the Cosmos DB emulator it drives the in-process app. Either
//! way it ends with `verify` passing and every acknowledged write present.
//!
//! The seed is printed; `STORM_SEED=<seed> cargo test --test api storm` replays the same
//! choices (the interleaving itself depends on timing).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cosmos_blog::domain::{LikeId, UserId};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, Store};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::drafts::in_seconds;
use crate::restart::assert_binary_verifies;
use testkit::app::request_as;
use testkit::{Backend, Served, TestApp, assert_store_verifies, binary};

const USERS: usize = 20;
/// Enough posts (about a third) to push the feed past its bound of 100.
const OPERATIONS: usize = 400;
const CLIENTS: usize = 8;

fn seed() -> u64 {
    std::env::var("STORM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

fn user(n: usize) -> String {
    format!("storm-{n:02}")
}

/// What became of one request.
enum Outcome {
    Acknowledged(Value),
    Refused(StatusCode),
    /// No answer (the server died): the write may or may not have happened.
    Lost,
}

#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn new(base: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: base.to_owned(),
        }
    }

    async fn send(&self, method: Method, path: &str, caller: &str, body: Option<Value>) -> Outcome {
        let url = format!("{}{path}", self.base);
        let request = request_as(&self.http, method, url, Some(caller), body.as_ref());
        let Ok(response) = request.send().await else {
            return Outcome::Lost;
        };
        let status = response.status();
        if !status.is_success() {
            return Outcome::Refused(status);
        }
        match response.json::<Value>().await {
            Ok(item) => Outcome::Acknowledged(item),
            Err(_) => Outcome::Lost,
        }
    }
}

/// What the API acknowledged (and what was only sent), to check against the store at the end.
#[derive(Default)]
struct Ledger {
    /// (post id, author).
    posts: Vec<(String, String)>,
    original_titles: HashMap<String, String>,
    /// Every title sent in an edit, acknowledged or not.
    edit_titles: HashMap<String, Vec<String>>,
    /// Posts with an acknowledged edit.
    edited: HashSet<String>,
    /// (post id, comment id).
    comments: Vec<(String, String)>,
    /// (post id, liker).
    likes: HashSet<(String, String)>,
    /// Every username sent for a user, the first one first.
    names: HashMap<String, Vec<String>>,
    /// Users with an acknowledged rename.
    renamed: HashSet<String>,
    /// Posts ever sent as a draft or scheduled: comments and likes on them may answer 404
    /// (an unpublished post is its author's alone).
    unpublished: HashSet<String>,
    acknowledged: usize,
    conflicts: usize,
    lost: usize,
    unexpected: Vec<String>,
}

impl Ledger {
    /// Whether `outcome` is the 404 of a post that may be unpublished at the time.
    fn hidden(&self, post: &str, outcome: &Outcome) -> bool {
        matches!(outcome, Outcome::Refused(StatusCode::NOT_FOUND))
            && self.unpublished.contains(post)
    }

    fn tally(&mut self, n: usize, what: &str, outcome: &Outcome) {
        match outcome {
            Outcome::Acknowledged(_) => self.acknowledged += 1,
            // Many writers on one post can exhaust the retries: refused, nothing written.
            Outcome::Refused(StatusCode::CONFLICT) => self.conflicts += 1,
            Outcome::Refused(status) => self
                .unexpected
                .push(format!("operation {n} ({what}) answered {status}")),
            Outcome::Lost => self.lost += 1,
        }
    }
}

/// The tags posts draw theirs from, in forms the server normalises (case, inner spaces).
const TAGS: [&str; 5] = ["rust", "Cosmos DB", "azure", " storm ", "tests"];

/// A post's body with up to three tags and, one time in five, a draft or a post scheduled a few
/// seconds ahead (published by the schedule during the storm or after it); else published.
fn post_body(rng: &mut fastrand::Rng, title: &str, content: &str) -> (Value, bool) {
    let tags: Vec<&str> = (0..rng.usize(0..=3))
        .map(|_| TAGS[rng.usize(..TAGS.len())])
        .collect();
    let mut body = json!({"title": title, "content": content, "tags": tags});
    let unpublished = match rng.u32(..10) {
        0 => {
            body["status"] = json!("draft");
            true
        }
        1 => {
            body["status"] = json!("scheduled");
            body["publishAt"] = json!(in_seconds(3));
            true
        }
        _ => false,
    };
    (body, unpublished)
}

fn id_of(item: &Value) -> String {
    item["id"].as_str().expect("an id").to_owned()
}

/// Writes `value` down as sent for `key`, before it is sent: a request that gets no answer
/// may still have landed, so the store may end with any value sent, acknowledged or not.
fn sent(values: &mut HashMap<String, Vec<String>>, key: &str, value: &str) {
    values
        .entry(key.to_owned())
        .or_default()
        .push(value.to_owned());
}

/// One random operation, number `n`, recorded in the ledger.
async fn operate(client: &Client, ledger: &Mutex<Ledger>, rng: &mut fastrand::Rng, n: usize) {
    let actor = user(rng.usize(..USERS));
    let roll = rng.u32(..100);
    let content = "storm é ".repeat(rng.usize(1..60));
    let target = {
        let ledger = ledger.lock().unwrap();
        (!ledger.posts.is_empty()).then(|| ledger.posts[rng.usize(..ledger.posts.len())].clone())
    };
    match (roll, target) {
        (0..35, _) | (_, None) => {
            let title = format!("post {n}");
            let (body, unpublished) = post_body(rng, &title, &content);
            let outcome = client
                .send(Method::POST, "/api/posts", &actor, Some(body))
                .await;
            let mut ledger = ledger.lock().unwrap();
            ledger.tally(n, "post", &outcome);
            if let Outcome::Acknowledged(item) = outcome {
                if unpublished {
                    ledger.unpublished.insert(id_of(&item));
                }
                ledger.original_titles.insert(id_of(&item), title);
                ledger.posts.push((id_of(&item), actor));
            }
        }
        (35..45, Some((post, author))) => {
            let title = format!("edit {n}");
            sent(&mut ledger.lock().unwrap().edit_titles, &post, &title);
            let (body, unpublished) = post_body(rng, &title, &content);
            if unpublished {
                // Marked before it is sent: a comment racing the edit may meet the draft.
                ledger.lock().unwrap().unpublished.insert(post.clone());
            }
            let path = format!("/api/posts/{post}");
            let outcome = client.send(Method::PUT, &path, &author, Some(body)).await;
            let mut ledger = ledger.lock().unwrap();
            ledger.tally(n, "edit", &outcome);
            if let Outcome::Acknowledged(_) = outcome {
                ledger.edited.insert(post);
            }
        }
        (45..65, Some((post, _))) => {
            let path = format!("/api/posts/{post}/comments");
            let body = json!({"content": content});
            let outcome = client.send(Method::POST, &path, &actor, Some(body)).await;
            let mut ledger = ledger.lock().unwrap();
            if ledger.hidden(&post, &outcome) {
                return;
            }
            ledger.tally(n, "comment", &outcome);
            if let Outcome::Acknowledged(item) = outcome {
                ledger.comments.push((post, id_of(&item)));
            }
        }
        (65..88, Some((post, _))) => {
            let path = format!("/api/posts/{post}/likes");
            let outcome = client.send(Method::POST, &path, &actor, None).await;
            let mut ledger = ledger.lock().unwrap();
            if ledger.hidden(&post, &outcome) {
                return;
            }
            ledger.tally(n, "like", &outcome);
            if let Outcome::Acknowledged(_) = outcome {
                ledger.likes.insert((post, actor));
            }
        }
        _ => {
            let name = format!("{actor} #{n}");
            sent(&mut ledger.lock().unwrap().names, &actor, &name);
            let path = format!("/api/users/{actor}");
            let body = json!({"username": name});
            let outcome = client.send(Method::PUT, &path, &actor, Some(body)).await;
            let mut ledger = ledger.lock().unwrap();
            ledger.tally(n, "rename", &outcome);
            if let Outcome::Acknowledged(_) = outcome {
                ledger.renamed.insert(actor);
            }
        }
    }
}

/// The shared budget of operations: each client takes the next number until `until` is
/// reached or `stop` is set. The client that takes the number of the planned kill kills the
/// server and stops every client.
struct Budget {
    started: AtomicUsize,
    stop: AtomicBool,
    /// The server to kill, and when: once this many operations have started.
    kill: Mutex<Option<(usize, Served)>>,
    /// Operations started when the server was killed.
    killed_after: Mutex<Option<usize>>,
}

impl Budget {
    fn new(kill: Option<(usize, Served)>) -> Self {
        Self {
            started: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            kill: Mutex::new(kill),
            killed_after: Mutex::new(None),
        }
    }

    fn take(&self, until: usize) -> Option<usize> {
        if self.stop.load(Ordering::SeqCst) {
            return None;
        }
        let n = self
            .started
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < until).then_some(n + 1)
            })
            .ok()?;
        self.kill_if_planned_at(n);
        Some(n)
    }

    fn kill_if_planned_at(&self, n: usize) {
        let mut kill = self.kill.lock().unwrap();
        if kill.as_ref().is_some_and(|(at, _)| *at == n + 1) {
            self.stop.store(true, Ordering::SeqCst);
            if let Some((_, mut server)) = kill.take() {
                server.kill();
            }
            *self.killed_after.lock().unwrap() = Some(self.started.load(Ordering::SeqCst));
        }
    }
}

async fn storm(client: &Client, ledger: &Arc<Mutex<Ledger>>, budget: &Arc<Budget>, seed: u64) {
    let clients: Vec<_> = (0..CLIENTS as u64)
        .map(|c| {
            let (client, ledger, budget) = (client.clone(), Arc::clone(ledger), Arc::clone(budget));
            // Each phase and client draws its own sequence from the seed.
            let start = budget.started.load(Ordering::SeqCst) as u64;
            let mut rng = fastrand::Rng::with_seed(seed ^ (start << 32) ^ c);
            tokio::spawn(async move {
                while let Some(n) = budget.take(OPERATIONS) {
                    operate(&client, &ledger, &mut rng, n).await;
                }
            })
        })
        .collect();
    for client in clients {
        client.await.expect("client task");
    }
}

async fn register_users(client: &Client) -> Arc<Mutex<Ledger>> {
    let mut ledger = Ledger::default();
    for n in 0..USERS {
        let id = user(n);
        let outcome = client
            .send(
                Method::PUT,
                &format!("/api/users/{id}"),
                &id,
                Some(json!({"username": id})),
            )
            .await;
        assert!(matches!(outcome, Outcome::Acknowledged(_)), "register {id}");
        ledger.names.insert(id.clone(), vec![id]);
    }
    Arc::new(Mutex::new(ledger))
}

async fn read(store: &Arc<dyn Store>, container: Container, pk: &str, id: &str) -> Option<Value> {
    store
        .read_item(container, &PartitionKey::single(pk), id)
        .await
        .expect("store read")
        .map(|doc| doc.item)
}

/// Every acknowledged write is in the store; edits and renames ended on a value sent.
async fn check_acknowledged(store: &Arc<dyn Store>, ledger: &Mutex<Ledger>) {
    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    assert!(ledger.unexpected.is_empty(), "{:#?}", ledger.unexpected);
    for (post, author) in &ledger.posts {
        let stored = read(store, Container::Posts, post, post).await;
        let stored = stored.unwrap_or_else(|| panic!("acknowledged post {post} lost"));
        assert_eq!(stored["userId"], author.as_str());
        let sent = ledger.edit_titles.get(post).cloned().unwrap_or_default();
        let title = stored["title"].as_str().unwrap().to_owned();
        let possible = sent.contains(&title)
            || (!ledger.edited.contains(post) && ledger.original_titles[post] == title);
        assert!(possible, "post {post} has title {title:?}; sent {sent:?}");
    }
    for (post, comment) in &ledger.comments {
        let stored = read(store, Container::Posts, post, comment).await;
        assert!(stored.is_some(), "acknowledged comment {comment} lost");
    }
    for (post, liker) in &ledger.likes {
        let id = LikeId::for_liker(&UserId::parse(liker).unwrap()).to_string();
        let stored = read(store, Container::Posts, post, &id).await;
        assert!(
            stored.is_some(),
            "acknowledged like of {post} by {liker} lost"
        );
    }
    for (user, names) in &ledger.names {
        let stored = read(store, Container::Users, user, user).await.unwrap();
        let name = stored["username"].as_str().unwrap().to_owned();
        assert!(names.contains(&name), "{user} is {name:?}; sent {names:?}");
        if ledger.renamed.contains(user) {
            assert_ne!(name, names[0], "{user}'s acknowledged rename lost");
        }
    }
    eprintln!(
        "storm: {} acknowledged ({} posts, {} of them ever a draft or scheduled, {} comments, {} \
         likes, {} posts edited, {} users renamed), {} refused with 409, {} without an answer",
        ledger.acknowledged,
        ledger.posts.len(),
        ledger.unpublished.len(),
        ledger.comments.len(),
        ledger.likes.len(),
        ledger.edited.len(),
        ledger.renamed.len(),
        ledger.conflicts,
        ledger.lost
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_with_a_kill_in_the_middle_ends_verified_embedded() {
    let seed = seed();
    eprintln!("storm seed {seed} (STORM_SEED={seed} replays its choices)");
    let data_dir = TempDir::new().unwrap();
    let mut server = binary!().on_data(data_dir.path()).serve();
    let client = Client::new(&server.base().await);
    let ledger = register_users(&client).await;

    // The kill comes after a third to two thirds of the operations, while some are in flight.
    let kill_at = OPERATIONS / 3 + fastrand::Rng::with_seed(seed).usize(..OPERATIONS / 3);
    let budget = Arc::new(Budget::new(Some((kill_at, server))));
    storm(&client, &ledger, &budget, seed).await;
    let killed_after = budget
        .killed_after
        .lock()
        .unwrap()
        .expect("the server was killed");
    assert!(
        killed_after < OPERATIONS,
        "the kill came after every operation"
    );
    eprintln!("storm: killed after {killed_after} operations had started");

    // Restart on the same data (on another port); new connections; the rest of the
    // operations.
    let mut server = binary!().on_data(data_dir.path()).serve();
    let client = Client::new(&server.base().await);
    budget.stop.store(false, Ordering::SeqCst);
    storm(&client, &ledger, &budget, seed).await;
    assert_eq!(budget.started.load(Ordering::SeqCst), OPERATIONS);

    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(&data_dir.path().join("blog.sqlite3")).unwrap());
    let report = assert_store_verifies(&store, Duration::from_secs(120)).await;
    eprintln!("{}", report.verdict());
    check_acknowledged(&store, &ledger).await;
    server.kill();
    assert_binary_verifies(data_dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_ends_verified_cosmos() {
    storm_in_process(&TestApp::spawn(Backend::Cosmos).start().await).await;
}

/// The storm on an application in this process (its store maybe faulty: see `faults`): every
/// request is answered, and only with an acknowledgement or a 409 of too many writers.
pub async fn storm_in_process(app: &TestApp) {
    let seed = seed();
    eprintln!("storm seed {seed} (STORM_SEED={seed} replays its choices)");
    let client = Client::new(&app.address);
    let ledger = register_users(&client).await;
    let budget = Arc::new(Budget::new(None));
    storm(&client, &ledger, &budget, seed).await;
    assert_eq!(budget.started.load(Ordering::SeqCst), OPERATIONS);
    assert_eq!(ledger.lock().unwrap().lost, 0, "every request was answered");
    let report = app.assert_verifies().await;
    eprintln!("{}", report.verdict());
    check_acknowledged(&app.store, &ledger).await;
}
