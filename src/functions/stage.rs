//! `cosmos-blog stage`: assembles a deployable script root. The Functions host only finds
//! function folders directly beside `host.json`, so the function folders of the chosen data
//! layout (the repository's `functions/*` for `single`) are written next to it, with the
//! Linux x64 binary, and nothing else. Optionally zips it for
//! `az functionapp deployment source config-zip` (the azd hook in `infra/hooks/` does).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use zip::write::{SimpleFileOptions, ZipWriter};
use zip::{CompressionMethod, System};

use super::metadata::{self, EXECUTABLE};
use crate::store::Tenancy;

/// Where `stage` puts the script root unless told (git-ignored).
pub const DEFAULT_OUT: &str = ".staging/app";

/// The release binary for Linux x64: a cross build's folder first (the target Functions runs
/// on), then the host build.
pub fn default_binary(project_root: &Path) -> PathBuf {
    let cross = project_root.join(format!(
        "target/x86_64-unknown-linux-gnu/release/{EXECUTABLE}"
    ));
    if cross.is_file() {
        cross
    } else {
        project_root.join(format!("target/release/{EXECUTABLE}"))
    }
}

/// Writes the script root of the `tenancy` layout to `out`: `host.json` (which starts the
/// binary in that layout), one folder per function, and `binary` copied as [`EXECUTABLE`]
/// with the execute bit set. A previous staging at `out` is replaced; any other non-empty
/// folder is refused rather than wiped.
pub fn stage(out: &Path, binary: &Path, tenancy: Tenancy) -> anyhow::Result<()> {
    if !binary.is_file() {
        bail!(
            "no binary at {} (build it with `cargo build --release`, or pass --binary)",
            binary.display()
        );
    }
    prepare_out(out)?;
    metadata::write_files(out, &metadata::script_root_files(tenancy))
        .with_context(|| format!("cannot write the function metadata into {}", out.display()))?;
    let target = out.join(EXECUTABLE);
    std::fs::copy(binary, &target)
        .with_context(|| format!("cannot copy {} into the script root", binary.display()))?;
    make_executable(&target)?;
    Ok(())
}

fn prepare_out(out: &Path) -> anyhow::Result<()> {
    if out.exists() {
        let is_empty = std::fs::read_dir(out)
            .with_context(|| format!("{} is not a readable folder", out.display()))?
            .next()
            .is_none();
        if !is_empty && !out.join("host.json").is_file() {
            bail!(
                "{} is not empty and is not a previous staging; refusing to replace it",
                out.display()
            );
        }
        std::fs::remove_dir_all(out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> anyhow::Result<()> {
    // The zip records the mode itself (see `zip_script_root`); nothing to do on disk.
    Ok(())
}

/// The zip's path for a script root at `out`: beside it, `<out>.zip`.
pub fn zip_path(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".zip");
    out.with_file_name(name)
}

/// Zips the script root at `dir` into `zip_path`, entries relative to the root, deflated,
/// in a stable order. The binary gets mode 0755 in the archive: Linux Functions hosts run
/// the package as extracted, and a binary without the execute bit would not start (a known
/// cause of dead custom handlers on Flex Consumption). The modes are set here, never read
/// from the files, and every entry is marked as made on Unix: an archive made on Windows
/// would otherwise say "MS-DOS", whose attributes have no execute bit, and extractors would
/// ignore the Unix mode.
pub fn zip_script_root(dir: &Path, zip_path: &Path) -> anyhow::Result<()> {
    let file =
        File::create(zip_path).with_context(|| format!("cannot create {}", zip_path.display()))?;
    let mut writer = ZipWriter::new(file);
    for relative in files_under(dir)? {
        let name = archive_name(&relative)?;
        let mode = if relative == Path::new(EXECUTABLE) {
            0o755
        } else {
            0o644
        };
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .system(System::Unix)
            .unix_permissions(mode);
        writer.start_file(name, options)?;
        io::copy(&mut File::open(dir.join(&relative))?, &mut writer)?;
    }
    writer.finish()?;
    Ok(())
}

/// Zip entry names use `/` whatever the platform.
fn archive_name(relative: &Path) -> anyhow::Result<String> {
    let parts: Option<Vec<&str>> = relative.iter().map(|part| part.to_str()).collect();
    match parts {
        Some(parts) => Ok(parts.join("/")),
        None => bail!("{} is not a UTF-8 path", relative.display()),
    }
}

/// Every file under `dir`, relative to it, sorted.
pub fn files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&relative))? {
            let entry = entry?;
            let path = relative.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Whether `path` starts like a Linux x86-64 executable (ELF, 64-bit, machine 0x3E), the
/// only kind the Linux Functions workers can start.
pub fn is_linux_x64_elf(path: &Path) -> io::Result<bool> {
    let mut header = [0u8; 20];
    let mut file = File::open(path)?;
    if file.read_exact(&mut header).is_err() {
        return Ok(false);
    }
    let elf64 = header[..4] == *b"\x7fELF" && header[4] == 2;
    let x86_64 = u16::from_le_bytes([header[18], header[19]]) == 0x3E;
    Ok(elf64 && x86_64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_sits_beside_the_folder() {
        assert_eq!(
            zip_path(Path::new(".staging/app")),
            PathBuf::from(".staging/app.zip")
        );
        assert_eq!(zip_path(Path::new("out.v1")), PathBuf::from("out.v1.zip"));
    }
}
