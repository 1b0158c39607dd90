# azd `postdeploy` hook on Windows (azure.yaml): the PowerShell twin of deploy.sh, which says
# what it does and which azd environment values it reads.
$ErrorActionPreference = 'Stop'

function Fail([string] $message) {
    [Console]::Error.WriteLine("deploy hook: $message")
    exit 1
}

if (-not $env:AZURE_RESOURCE_GROUP -or -not $env:AZURE_FUNCTION_APP_NAME) { Fail 'run azd provision first' }
$tenancy = if ($env:BLOG_TENANCY) { $env:BLOG_TENANCY } else { 'single' }
if ($tenancy -cnotin @('single', 'multi')) { Fail "BLOG_TENANCY must be single or multi, not '$tenancy'" }
# The routes are fixed in the package, the partition keys in the containers: they must agree.
$provisioned = if ($env:BLOG_PROVISIONED_TENANCY) { $env:BLOG_PROVISIONED_TENANCY } else { $tenancy }
if ($provisioned -cne $tenancy) {
    Fail "BLOG_TENANCY is $tenancy but the containers were created for $provisioned; run azd provision, or use another environment (azd env new): a layout is fixed once its containers exist"
}
if (-not (Get-Command cargo -ErrorAction SilentlyContinue)) { Fail 'cargo is needed to build the package (https://rustup.rs)' }
if (-not (Get-Command az -ErrorAction SilentlyContinue)) { Fail 'the Azure CLI (az) is needed to upload the package' }

# Azure Functions on Linux starts only a Linux x86-64 executable.
if ($env:BLOG_BINARY) {
    $binary = $env:BLOG_BINARY
} elseif ($IsLinux -and [System.Runtime.InteropServices.RuntimeInformation]::OSArchitecture -eq 'X64') {
    cargo build --release --locked
    if ($LASTEXITCODE -ne 0) { Fail 'cargo build failed' }
    $binary = 'target/release/cosmos-blog'
} elseif (Get-Command cargo-zigbuild -ErrorAction SilentlyContinue) {
    cargo zigbuild --release --locked --target x86_64-unknown-linux-gnu
    if ($LASTEXITCODE -ne 0) { Fail 'cargo zigbuild failed' }
    $binary = 'target/x86_64-unknown-linux-gnu/release/cosmos-blog'
} else {
    Fail 'this machine does not build for Linux x86-64: install cargo-zigbuild, or build in a Linux container (WSL) and set BLOG_BINARY to the binary (azd env set BLOG_BINARY <path>)'
}

# host.json at the root, every function folder beside it, the binary with its executable bit
# (the zip records it whatever the file system, Windows included).
cargo run --release --locked --quiet -- stage --zip --tenancy $tenancy --binary $binary
if ($LASTEXITCODE -ne 0) { Fail 'staging failed' }

# One-deploy to the Flex Consumption app with a Microsoft Entra ID token; the app's new role on
# the deployment container can take a few minutes to apply after the first provisioning.
for ($attempt = 1; ; $attempt++) {
    az functionapp deployment source config-zip `
        --subscription $env:AZURE_SUBSCRIPTION_ID `
        --resource-group $env:AZURE_RESOURCE_GROUP `
        --name $env:AZURE_FUNCTION_APP_NAME `
        --src .staging/app.zip
    if ($LASTEXITCODE -eq 0) { break }
    if ($attempt -ge 5) { Fail "the upload failed $attempt times" }
    Write-Warning "deploy hook: upload failed (attempt $attempt); retrying in 60 s"
    Start-Sleep -Seconds 60
}
$target = if ($env:API_BASE_URL) { $env:API_BASE_URL } else { $env:AZURE_FUNCTION_APP_NAME }
Write-Host "deploy hook: deployed the $tenancy layout to $target"
