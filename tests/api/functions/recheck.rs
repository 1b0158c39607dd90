//! The re-check's timer function: its invocations, its settings and its metadata.

use super::*;

/// The `Recheck` function's log lines for one replayed timer tick, after checking that the
/// answer is the host's invocation body.
async fn tick(h: &Harness) -> Vec<String> {
    let (status, content_type, body) = h.invoke("Recheck", fixture("recheck_timer.json")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(body["Outputs"], json!({}));
    assert_eq!(body["ReturnValue"], Value::Null);
    let logs = logs(&body);
    assert!(
        logs.first().is_some_and(|l| l.starts_with("Recheck: ")),
        "{logs:?}"
    );
    logs
}

#[tokio::test]
async fn recheck_timer_invocations_answer_the_host_and_repair_what_the_triggers_missed() {
    let mut h = Harness::new();
    h.recheck = Recheck::OnTimer(Duration::from_millis(1));
    // A post whose trigger batch never came (no trigger runs here): no copy anywhere.
    let store = h.dyn_store();
    h.store_ada().await;
    let post = json!({
        "id": "p-x", "type": "post", "postId": "p-x", "userId": "u-ada", "userUsername": "ada",
        "title": "Missed", "content": "by the trigger", "commentCount": 0, "likeCount": 0,
        "creationDate": "2026-11-22T09:15:02.0000000Z"
    });
    store
        .upsert_item(Container::Posts, &PartitionKey::single("p-x"), post)
        .await
        .expect("post");

    // Each tick re-checks what is a delay old: the post once its commit second is past.
    let repaired = eventually_ok(Duration::from_secs(30), || async {
        let logs = tick(&h).await;
        let repaired = logs.iter().find(|l| l.starts_with("Recheck: repaired"));
        repaired.cloned().ok_or_else(|| format!("{logs:?}"))
    })
    .await;
    assert!(
        repaired.starts_with("Recheck: repaired missing-user-copy posts/p-x/p-x"),
        "{repaired}"
    );
    assert_eq!(ids(&h.get("/api/feed").await), ["p-x"]);
    assert_eq!(ids(&h.get("/api/users/u-ada/posts").await), ["p-x"]);
    let report = cosmos_blog::verify::verify(&store).await.expect("verify");
    assert!(report.holds(), "{}", report.violation_lines(10).join("\n"));
}

#[tokio::test]
async fn recheck_timer_does_nothing_when_off_or_beside_the_pump() {
    for (recheck, says) in [
        (Recheck::Off, "Recheck: off (BLOG_RECHECK_DELAY_MS=0)"),
        (
            Recheck::BesideThePump(Duration::from_secs(600)),
            "Recheck: runs beside the in-process change-feed pump; nothing to do here",
        ),
    ] {
        let mut h = Harness::new();
        h.recheck = recheck;
        assert_eq!(tick(&h).await, [says]);
        let leases = h.changes(Container::Leases).await;
        assert!(leases.is_empty(), "no checkpoint written: {leases:?}");
    }
}

#[tokio::test]
async fn recheck_timer_failures_are_500_and_bad_bodies_400() {
    let mut h = Harness::new();
    h.recheck = Recheck::OnTimer(Duration::from_millis(1));
    h.store.down.store(true, Ordering::SeqCst);
    let (status, content_type, problem) = h.invoke("Recheck", fixture("recheck_timer.json")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(problem["code"], "recheck-failed");
    h.store.down.store(false, Ordering::SeqCst);
    assert_eq!(tick(&h).await.len(), 1);
    for body in ["not json", "{}", "{\"Metadata\": {}}"] {
        let (status, _, problem) = h.invoke("Recheck", body.into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(problem["code"], "invalid-invocation");
    }
}

#[test]
fn recheck_timer_metadata_is_generated_from_the_table() {
    let path = manifest_dir().join("functions/Recheck/function.json");
    let function: Value =
        serde_json::from_slice(&std::fs::read(path).expect("function.json")).expect("json");
    assert_eq!(
        function,
        json!({"bindings": [{
            "type": "timerTrigger", "direction": "in", "name": "timer",
            "schedule": "0 */1 * * * *"
        }]})
    );
    let timer = |tenancy| -> Vec<metadata::GeneratedFile> {
        metadata::script_root_files(tenancy)
            .into_iter()
            .filter(|f| f.path.starts_with("Recheck"))
            .collect()
    };
    assert_eq!(timer(Tenancy::Single).len(), 1);
    assert_eq!(timer(Tenancy::Multi), timer(Tenancy::Single));
}
