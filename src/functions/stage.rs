//! `cosmos-blog stage`: assembles a deployable script root. The Functions host only finds
//! function folders directly beside `host.json`, so the function folders of the chosen data
//! layout (the repository's `functions/*` for `single`) are written next to it, with the
//! Linux x64 binary, and nothing else. Optionally zips it for
//! `az functionapp deployment source config-zip` (the azd hook in `infra/hooks/` does).

use std::fs::File;
use std::io;
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

/// The newest glibc the Azure Functions Linux image offers a custom handler: the v4 host's
/// images are built on Debian 12 "bookworm" (github.com/Azure/azure-functions-docker,
/// `host/4/bookworm`), whose glibc is 2.36. A binary that needs a newer symbol version does
/// not start there.
pub const FUNCTIONS_IMAGE_GLIBC: GlibcVersion = GlibcVersion(2, 36);

/// A glibc symbol version, as in `GLIBC_2.34`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlibcVersion(pub u32, pub u32);

impl std::fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl GlibcVersion {
    /// `GLIBC_2.34` (or `GLIBC_2.2.5`: the patch level is below what images differ in).
    fn from_symbol_version(name: &[u8]) -> Option<Self> {
        let version = std::str::from_utf8(name.strip_prefix(b"GLIBC_")?).ok()?;
        let mut parts = version.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().map_or(Ok(0), str::parse).ok()?;
        Some(Self(major, minor))
    }
}

/// Refuses a binary the Functions Linux host cannot start: missing, not an x86-64 Linux ELF
/// executable, or needing a newer glibc than [`FUNCTIONS_IMAGE_GLIBC`].
pub fn check_binary_runs_on_functions(binary: &Path) -> anyhow::Result<()> {
    if !binary.is_file() {
        bail!(
            "no binary at {} (build it with `cargo build --release`, or pass --binary)",
            binary.display()
        );
    }
    let data =
        std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let needed = needed_glibc(&data).map_err(|reason| {
        anyhow::anyhow!(
            "{} is not a Linux x86-64 executable ({reason}); Azure Functions on Linux cannot \
             start it: build it for x86_64-unknown-linux-gnu",
            binary.display()
        )
    })?;
    if let Some(needed) = needed.filter(|needed| *needed > FUNCTIONS_IMAGE_GLIBC) {
        bail!(
            "{} needs glibc {needed}, but the Azure Functions Linux image has glibc \
             {FUNCTIONS_IMAGE_GLIBC}: build it on a system with glibc {FUNCTIONS_IMAGE_GLIBC} or \
             older (Debian 12, say), or for x86_64-unknown-linux-musl",
            binary.display()
        );
    }
    Ok(())
}

/// The newest glibc symbol version a 64-bit x86-64 Linux ELF file needs (`None` when it needs
/// none, as a static binary), or why the file is not one.
fn needed_glibc(data: &[u8]) -> Result<Option<GlibcVersion>, String> {
    use object::elf;
    use object::read::elf::{ElfFile64, FileHeader};

    let file = ElfFile64::<object::Endianness>::parse(data)
        .map_err(|_| "not a 64-bit ELF file".to_owned())?;
    let endian = file.endian();
    let header = file.elf_header();
    if header.e_machine(endian) != elf::EM_X86_64 {
        return Err(format!(
            "machine {:#x}, not x86-64",
            header.e_machine(endian)
        ));
    }
    if !matches!(
        header.e_ident().os_abi,
        elf::ELFOSABI_NONE | elf::ELFOSABI_GNU
    ) {
        return Err(format!("OS ABI {}, not Linux", header.e_ident().os_abi));
    }
    if !matches!(header.e_type(endian), elf::ET_EXEC | elf::ET_DYN) {
        return Err("not an executable".to_owned());
    }
    let unreadable = |e: object::Error| format!("unreadable version requirements: {e}");
    let sections = file.elf_section_table();
    let Some((mut needs, link)) = sections.gnu_verneed(endian, data).map_err(unreadable)? else {
        return Ok(None);
    };
    let strings = sections.strings(endian, data, link).map_err(unreadable)?;
    let mut newest = None;
    while let Some((_, mut versions)) = needs.next().map_err(unreadable)? {
        while let Some(version) = versions.next().map_err(unreadable)? {
            let name = version.name(endian, strings).map_err(unreadable)?;
            newest = newest.max(GlibcVersion::from_symbol_version(name));
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_symbol_versions_parse() {
        assert_eq!(
            GlibcVersion::from_symbol_version(b"GLIBC_2.34"),
            Some(GlibcVersion(2, 34))
        );
        assert_eq!(
            GlibcVersion::from_symbol_version(b"GLIBC_2.2.5"),
            Some(GlibcVersion(2, 2))
        );
        assert_eq!(GlibcVersion::from_symbol_version(b"GCC_3.0"), None);
    }

    #[test]
    fn zip_sits_beside_the_folder() {
        assert_eq!(
            zip_path(Path::new(".staging/app")),
            PathBuf::from(".staging/app.zip")
        );
        assert_eq!(zip_path(Path::new("out.v1")), PathBuf::from("out.v1.zip"));
    }
}
