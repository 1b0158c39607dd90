//! Images travel with the data: `export` writes their bytes beside the items, `import` puts
//! them back into the target's image store, and `backup` copies them beside the store's copy.
//! Each image, and each of its renditions, comes back byte for byte, and both copies verify.

use std::path::{Path, PathBuf};

use image::ImageFormat;
use reqwest::StatusCode;
use serde_json::Value;
use tempfile::TempDir;
use testkit::binary::Binary;
use testkit::{Backend, TestApp, binary};

use crate::images::{picture, uploaded, uploaded_png};

/// Every address of `images` (each image and its renditions) with the bytes `app` serves there.
async fn served(app: &TestApp, images: &[Value]) -> Vec<(String, Vec<u8>)> {
    let mut served = Vec::new();
    for image in images {
        let renditions = image["renditions"].as_array().unwrap();
        let urls = std::iter::once(&image["url"]).chain(renditions.iter().map(|r| &r["url"]));
        for url in urls {
            let url = url.as_str().unwrap().to_owned();
            let response = app.get_raw(&url).await;
            assert_eq!(response.status(), StatusCode::OK, "{url}");
            served.push((url, response.bytes().await.unwrap().to_vec()));
        }
    }
    served
}

fn run(command: testkit::binary::Binary) -> std::process::Output {
    let output = command.output();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `cosmos-blog import --from export` into the store (and image store) `store` names.
fn import(store: Binary, export: &Path) -> Binary {
    store.subcommand("import").arg("--from").arg(export)
}

/// `verify` run by `binary` (a store, and where its images are kept) passes, images included.
fn assert_verifies(binary: Binary) {
    let output = binary.subcommand("verify").output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("every one with its bytes, no orphan bytes"),
        "{stdout}"
    );
}

/// The same images, served by an application on the store in `dir`, and listed as ada's.
async fn assert_serves(dir: TempDir, images: &[Value], expected: &[(String, Vec<u8>)]) {
    let path = dir.path().to_owned();
    let app = TestApp::spawn(Backend::Embedded)
        .data_dir(dir)
        .start()
        .await;
    assert_eq!(served(&app, images).await, expected);
    let listed = app.get_json_as("ada", "/api/users/ada/images").await;
    assert_eq!(listed["items"].as_array().unwrap().len(), images.len());
    // Beside the running server (the folder goes with it).
    assert_verifies(binary!().on_data(&path));
}

/// An application on the embedded store in a folder of its own, and that folder (which goes
/// with the application).
async fn app_on_its_own_folder() -> (PathBuf, TestApp) {
    let source = TempDir::new().unwrap();
    let data = source.path().to_owned();
    let app = TestApp::spawn(Backend::Embedded)
        .data_dir(source)
        .start()
        .await;
    (data, app)
}

/// ada registered on `app` with `pictures` (content type, bytes) uploaded as hers: their
/// items, and every address of them with the bytes `app` serves there.
async fn ada_with_images(
    app: &TestApp,
    pictures: Vec<(&str, Vec<u8>)>,
) -> (Vec<Value>, Vec<(String, Vec<u8>)>) {
    app.register("ada", "Ada").await;
    let mut images = Vec::new();
    for (content_type, body) in pictures {
        images.push(uploaded(app, "ada", content_type, body).await);
    }
    let served = served(app, &images).await;
    (images, served)
}

/// Each of `served`'s bytes is in the export at `export`, in the file named for its address.
fn assert_exported(export: &Path, served: &[(String, Vec<u8>)]) {
    for (url, bytes) in served {
        let name = url.trim_start_matches("/images/").replace('/', ".w");
        let file = export.join("images").join("blog").join(name);
        assert_eq!(&std::fs::read(&file).unwrap(), bytes, "{}", file.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_import_and_backup_carry_the_images_byte_for_byte() {
    let (data, app) = app_on_its_own_folder().await;
    let (images, expected) = ada_with_images(
        &app,
        vec![
            ("image/png", picture(1000, 600, ImageFormat::Png)),
            ("image/jpeg", picture(300, 200, ImageFormat::Jpeg)),
        ],
    )
    .await;
    assert_eq!(expected.len(), 4, "a wide image has two renditions");

    let work = TempDir::new().unwrap();
    let export = work.path().join("export");
    let exported = run(binary!()
        .on_data(&data)
        .subcommand("export")
        .arg("--out")
        .arg(&export));
    let said = String::from_utf8_lossy(&exported.stdout);
    assert!(said.contains("2 images"), "{said}");
    let items = std::fs::read_to_string(export.join("images.jsonl")).unwrap();
    assert_eq!(items.lines().count(), 2);
    assert_exported(&export, &expected);

    let imported = TempDir::new().unwrap();
    run(import(binary!().on_data(imported.path()), &export));

    let backup = TempDir::new().unwrap();
    let backed_up = run(binary!()
        .on_data(&data)
        .subcommand("backup")
        .arg("--to")
        .arg(backup.path().join("blog.sqlite3")));
    let said = String::from_utf8_lossy(&backed_up.stdout);
    assert!(said.contains("4 files of images"), "{said}");
    drop(app);

    assert_serves(imported, &images, &expected).await;
    assert_serves(backup, &images, &expected).await;
}

/// An export is files anyone can edit: an image file that is not the image its item says is
/// refused with the rest of the export, before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_whose_image_file_is_not_its_image_is_refused() {
    let (data, app) = app_on_its_own_folder().await;
    app.register("ada", "Ada").await;
    let image = uploaded_png(&app, "ada", 40, 30).await;
    let work = TempDir::new().unwrap();
    let export = work.path().join("export");
    run(binary!()
        .on_data(&data)
        .subcommand("export")
        .arg("--out")
        .arg(&export));
    drop(app);
    let file = export
        .join("images")
        .join("blog")
        .join(image["id"].as_str().unwrap());
    std::fs::write(&file, b"<html><script>alert(1)</script></html>").unwrap();

    let target = work.path().join("target");
    let output = import(binary!().on_data(&target), &export).output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not an image of a type the blog keeps"),
        "{stderr}"
    );
    assert!(!target.join("images").exists(), "nothing was written");
}

/// A tenant of a `multi` store exported alone is a `single` export whose images are the
/// blog's: imported into a `single` store, each is served at the blog's own address, the same
/// bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_images_move_into_a_single_store() {
    let source = TempDir::new().unwrap();
    let data = source.path().to_owned();
    let site = TestApp::spawn(Backend::Embedded)
        .layout(cosmos_blog::store::Tenancy::Multi)
        .unaddressed()
        .data_dir(source)
        .start()
        .await;
    let (one, two) = (site.in_tenant("one"), site.in_tenant("two"));
    one.register("ada", "Ada").await;
    two.register("ada", "Ada").await;
    let image = uploaded_png(&one, "ada", 700, 300).await;
    uploaded_png(&two, "ada", 20, 20).await;
    let in_tenant = served(&one, std::slice::from_ref(&image)).await;

    let work = TempDir::new().unwrap();
    let export = work.path().join("export");
    run(binary!()
        .on_data(&data)
        .env("BLOG_TENANCY", "multi")
        .subcommand("export")
        .arg("--tenant")
        .arg("one")
        .arg("--out")
        .arg(&export));
    assert_eq!(
        std::fs::read_to_string(export.join("images.jsonl"))
            .unwrap()
            .lines()
            .count(),
        1,
        "only the tenant's image"
    );
    let target = TempDir::new().unwrap();
    run(import(binary!().on_data(target.path()), &export));
    drop(site);

    // The same image, at the blog's address instead of the tenant's.
    let at_the_blog: Value = serde_json::from_str(
        &serde_json::to_string(&image)
            .unwrap()
            .replace("/tenants/one/images/", "/images/"),
    )
    .unwrap();
    let expected: Vec<(String, Vec<u8>)> = in_tenant
        .into_iter()
        .map(|(url, bytes)| (url.replace("/tenants/one/images/", "/images/"), bytes))
        .collect();
    assert_eq!(expected.len(), 2, "the image and its rendition");
    assert_serves(target, &[at_the_blog], &expected).await;
}

/// On Azure Blob Storage too: `export` reads the images from the container the server uses and
/// `import` puts them into the target's container, byte for byte; the images' files never
/// touch the data folder, and the imported store verifies against its container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_import_carry_the_images_between_blob_containers() {
    let Some(azurite) = testkit::Azurite::start_or_skip().await else {
        return;
    };
    let connection = azurite.connection_string();
    let in_container = |container: &'static str| {
        let connection = connection.clone();
        move |settings: &mut cosmos_blog::settings::Settings| {
            settings.images.blob_connection = Some(connection);
            settings.images.blob_container = container.to_owned();
        }
    };
    let source = TempDir::new().unwrap();
    let data = source.path().to_owned();
    let app = TestApp::spawn(Backend::Embedded)
        .data_dir(source)
        .settings(in_container("source"))
        .start()
        .await;
    let (images, expected) = ada_with_images(
        &app,
        vec![("image/png", picture(1000, 600, ImageFormat::Png))],
    )
    .await;
    assert_eq!(expected.len(), 3, "a wide image has two renditions");
    assert!(
        !data.join("images").exists(),
        "the bytes are in the container"
    );

    let work = TempDir::new().unwrap();
    let export = work.path().join("export");
    let exported = run(binary!()
        .on_data(&data)
        .env("BLOG_IMAGES_CONNECTION", &connection)
        .env("BLOG_IMAGES_CONTAINER", "source")
        .subcommand("export")
        .arg("--out")
        .arg(&export));
    let said = String::from_utf8_lossy(&exported.stdout);
    assert!(said.contains("1 image"), "{said}");
    assert_exported(&export, &expected);

    let imported = TempDir::new().unwrap();
    let imported_path = imported.path().to_owned();
    run(import(
        binary!()
            .on_data(&imported_path)
            .env("BLOG_IMAGES_CONNECTION", &connection)
            .env("BLOG_IMAGES_CONTAINER", "target"),
        &export,
    ));
    assert!(!imported_path.join("images").exists(), "into the container");
    drop(app);

    let copy = TestApp::spawn(Backend::Embedded)
        .data_dir(imported)
        .settings(in_container("target"))
        .start()
        .await;
    assert_eq!(served(&copy, &images).await, expected);
    assert_verifies(
        binary!()
            .on_data(&imported_path)
            .env("BLOG_IMAGES_CONNECTION", &connection)
            .env("BLOG_IMAGES_CONTAINER", "target"),
    );
}
