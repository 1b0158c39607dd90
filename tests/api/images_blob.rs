//! The images' bytes in Azure Blob Storage, on Azurite, where only that store differs from the
//! files beside the embedded store (every image test also runs on it: `image_tests!`): the
//! container made at start-up with a connection string, the binary's `verify` and
//! `verify --repair` reading the same container as the server, and start-up refusing what
//! it cannot use.

use reqwest::StatusCode;

use testkit::{Azurite, Backend, TestApp, binary};

use super::images::uploaded_png;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_string_makes_the_named_container_and_keeps_every_blob_there() {
    use cosmos_blog::images::{BlobImageStore, ImageStore};

    let Some(azurite) = Azurite::start_or_skip().await else {
        return;
    };
    let connection = azurite.connection_string();
    let app = TestApp::spawn(Backend::Embedded)
        .blob_images(azurite)
        .settings(|settings| settings.images.blob_container = "pictures".into())
        .start()
        .await;
    assert_eq!(app.images.backend(), "blob");
    app.register("ada", "Ada").await;
    let image = uploaded_png(&app, "ada", 1000, 20).await;
    let id = image["id"].as_str().unwrap();

    // Another client of the same container sees the image and its two renditions, under the
    // image store's names, and the served bytes are the blob's.
    let pictures = BlobImageStore::with_connection_string(&connection, "pictures")
        .await
        .unwrap();
    let mut names = pictures.list().await.unwrap();
    names.sort();
    assert_eq!(
        names,
        [
            format!("blog/{id}"),
            format!("blog/{id}.w480"),
            format!("blog/{id}.w960")
        ]
    );
    let served = app.get_raw(image["url"].as_str().unwrap()).await;
    assert_eq!(served.status(), StatusCode::OK);
    let blob = pictures.get(&format!("blog/{id}")).await.unwrap().unwrap();
    assert_eq!(served.bytes().await.unwrap(), blob);
    assert_eq!(pictures.get("blog/missing").await.unwrap(), None);
    app.assert_verifies().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binarys_verify_reads_the_blob_container_and_repair_removes_its_orphans() {
    use cosmos_blog::images::{ImageId, ImageKey, Scope};

    let Some(azurite) = Azurite::start_or_skip().await else {
        return;
    };
    let connection = azurite.connection_string();
    let dir = tempfile::TempDir::new().unwrap();
    let data = dir.path().to_path_buf();
    let app = TestApp::spawn(Backend::Embedded)
        .data_dir(dir)
        .blob_images(azurite)
        .start()
        .await;
    app.register("ada", "Ada").await;
    uploaded_png(&app, "ada", 20, 20).await;
    // What an upload cut off between its bytes and its item leaves.
    let orphan = ImageKey::original(Scope::Blog, ImageId::generate()).name();
    app.images
        .put(&orphan, bytes::Bytes::from_static(b"x"), "image/png")
        .await
        .unwrap();

    let verify = |repair: bool| {
        let mut command = binary!()
            .on_data(&data)
            .env("BLOG_IMAGES_CONNECTION", &connection)
            .subcommand("verify");
        if repair {
            command = command.arg("--repair");
        }
        command.output()
    };
    let found = verify(false);
    let said = String::from_utf8_lossy(&found.stdout).into_owned();
    assert_eq!(found.status.code(), Some(1), "{found:?}");
    assert!(
        said.contains(&format!("orphan-image-bytes: {orphan}")),
        "{said}"
    );
    let repaired = verify(true);
    let said = String::from_utf8_lossy(&repaired.stdout).into_owned();
    assert_eq!(repaired.status.code(), Some(0), "{repaired:?}");
    assert!(
        said.contains("images: 1 image item, every one with its bytes"),
        "{said}"
    );
    assert!(!app.images.list().await.unwrap().contains(&orphan));
    assert_eq!(verify(false).status.code(), Some(0));
}

/// A folder holding an empty embedded store, for `verify` to open.
async fn a_store() -> tempfile::TempDir {
    let dir = tempfile::TempDir::new().unwrap();
    let store =
        testkit::open_backend(Backend::Embedded, cosmos_blog::store::Tenancy::Single, &dir).await;
    drop(store);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_says_what_it_cannot_use_for_the_images() {
    let dir = a_store().await;
    // The managed identity (here none: off Azure, the developer's sign-in, which this machine
    // may lack; nothing listens on that port either) cannot reach the container: nothing
    // starts, and it says which container and why.
    let said = refused_start(
        &dir,
        &[
            ("BLOG_IMAGES_ENDPOINT", "https://127.0.0.1:9/"),
            ("BLOG_IMAGES_CONTAINER", "photos"),
        ],
    );
    assert!(
        said.contains("https://127.0.0.1:9/photos") && said.contains("managed identity"),
        "{said}"
    );

    for (name, value, expected) in [
        (
            "BLOG_IMAGES_CONNECTION",
            "AccountName=a;AccountKey=c2VjcmV0;BlobEndpoint=http://blob.example/a",
            "plain http on another machine",
        ),
        (
            "BLOG_IMAGES_CONTAINER",
            "Not_A_Container",
            "not a container name",
        ),
    ] {
        let said = refused_start(
            &dir,
            &[
                ("BLOG_IMAGES_CONNECTION", "UseDevelopmentStorage=true"),
                (name, value),
            ],
        );
        assert!(said.contains(expected), "{said}");
        assert!(!said.contains("c2VjcmV0"), "the key is never shown: {said}");
    }

    let said = refused_start(
        &dir,
        &[
            ("BLOG_IMAGES_CONNECTION", "UseDevelopmentStorage=true"),
            ("BLOG_IMAGES_ENDPOINT", "https://blog.blob.core.windows.net"),
        ],
    );
    assert!(said.contains("give one"), "{said}");
}

/// What `verify` on the store in `dir` says on stderr when the images' settings `env` keep it
/// from starting; fails the test unless it stopped with 2, the code of unusable settings.
fn refused_start(dir: &tempfile::TempDir, env: &[(&str, &str)]) -> String {
    let refused = binary!()
        .on_data(dir.path())
        .envs(env)
        .subcommand("verify")
        .output();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    String::from_utf8_lossy(&refused.stderr).into_owned()
}
