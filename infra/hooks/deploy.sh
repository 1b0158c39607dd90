#!/bin/sh
# azd `postdeploy` hook (azure.yaml): builds the Linux x86-64 binary, stages the package of the
# environment's layout and uploads it to the Flex Consumption app. PowerShell twin: deploy.ps1.
#
# Reads the azd environment (azd passes its values to hooks):
#   AZURE_SUBSCRIPTION_ID, AZURE_RESOURCE_GROUP, AZURE_FUNCTION_APP_NAME   set by `azd provision`
#   BLOG_TENANCY              single (default) or multi: the layout of the package
#   BLOG_PROVISIONED_TENANCY  the layout the containers were created for (a Bicep output)
#   BLOG_BINARY               optional: a Linux x86-64 build to package instead of building here
# Needs cargo, and the Azure CLI signed in (`az login`) to upload.
set -eu

fail() {
    echo "deploy hook: $*" >&2
    exit 1
}

: "${AZURE_RESOURCE_GROUP:?run azd provision first}"
: "${AZURE_FUNCTION_APP_NAME:?run azd provision first}"
tenancy=${BLOG_TENANCY:-single}
case $tenancy in
single | multi) ;;
*) fail "BLOG_TENANCY must be single or multi, not '$tenancy'" ;;
esac
# The routes are fixed in the package, the partition keys in the containers: they must agree.
provisioned=${BLOG_PROVISIONED_TENANCY:-$tenancy}
if [ "$provisioned" != "$tenancy" ]; then
    fail "BLOG_TENANCY is $tenancy but the containers were created for $provisioned; run azd provision, or use another environment (azd env new): a layout is fixed once its containers exist"
fi
command -v cargo >/dev/null || fail "cargo is needed to build the package (https://rustup.rs)"
command -v az >/dev/null || fail "the Azure CLI (az) is needed to upload the package"

# Azure Functions on Linux starts only a Linux x86-64 executable.
if [ -n "${BLOG_BINARY:-}" ]; then
    binary=$BLOG_BINARY
elif [ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ]; then
    cargo build --release --locked
    binary=target/release/cosmos-blog
elif command -v cargo-zigbuild >/dev/null; then
    cargo zigbuild --release --locked --target x86_64-unknown-linux-gnu
    binary=target/x86_64-unknown-linux-gnu/release/cosmos-blog
else
    fail "this machine does not build for Linux x86-64: install cargo-zigbuild, or build in a Linux container and set BLOG_BINARY to the binary (azd env set BLOG_BINARY <path>)"
fi

# host.json at the root, every function folder beside it, the binary with its executable bit.
cargo run --release --locked --quiet -- stage --zip --tenancy "$tenancy" --binary "$binary"

# Flex Consumption apps take a one-deploy (the CLI posts the zip to their /api/publish endpoint
# with a Microsoft Entra ID token: basic auth is off). The app's new role on the deployment
# container can take a few minutes to apply after the first provisioning: retry.
attempt=1
until az functionapp deployment source config-zip \
    --subscription "${AZURE_SUBSCRIPTION_ID:?}" \
    --resource-group "$AZURE_RESOURCE_GROUP" \
    --name "$AZURE_FUNCTION_APP_NAME" \
    --src .staging/app.zip; do
    [ "$attempt" -lt 5 ] || fail "the upload failed $attempt times"
    echo "deploy hook: upload failed (attempt $attempt); retrying in 60 s" >&2
    attempt=$((attempt + 1))
    sleep 60
done
echo "deploy hook: deployed the $tenancy layout to ${API_BASE_URL:-$AZURE_FUNCTION_APP_NAME}"
