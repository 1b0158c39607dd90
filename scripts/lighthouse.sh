#!/usr/bin/env bash
# Lighthouse's scores (performance, accessibility, best practices, SEO) of the front page and
# of a post page, on a release build serving a small blog: three authors, posts with Markdown,
# comments and likes. Prints one line per page; the reports are left in $OUT.
#
# Needs Node 20 or later and Debian's chromium. Lighthouse 12 is installed into
# $LIGHTHOUSE_DIR (default /tmp/lighthouse), never into the repository.
#   scripts/lighthouse.sh
set -euo pipefail
cd "$(dirname "$0")/.."

LIGHTHOUSE_DIR=${LIGHTHOUSE_DIR:-/tmp/lighthouse}
OUT=${OUT:-$(mktemp -d)}
export CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium}
lighthouse="$LIGHTHOUSE_DIR/node_modules/.bin/lighthouse"
if [ ! -x "$lighthouse" ]; then
    npm install --prefix "$LIGHTHOUSE_DIR" --no-audit --no-fund lighthouse@12 >&2
fi

# BINARY: a release build already at hand (else it is built here).
binary=${BINARY:-}
if [ -z "$binary" ]; then
    cargo build --release --quiet
    binary="${CARGO_TARGET_DIR:-target}/release/cosmos-blog"
fi

data=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$data"
}
trap cleanup EXIT
"$binary" --port 0 --port-file "$data/port" --data-dir "$data" --auth header \
    --change-feed pump >"$data/server.log" 2>&1 &
server=$!
until [ -s "$data/port" ]; do
    kill -0 "$server" 2>/dev/null || { cat "$data/server.log" >&2; exit 1; }
    sleep 0.1
done
base="http://127.0.0.1:$(cat "$data/port")"

# call CALLER METHOD PATH [JSON]: the API as that user (development header); prints the body.
call() {
    curl --silent --show-error --fail -X "$2" -H "x-ms-client-principal-id: $1" \
        -H 'content-type: application/json' ${4:+--data "$4"} "$base$3"
}
id_of() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))'; }

call ada PUT /api/users/ada '{"username":"Ada Lovelace"}' >/dev/null
call grace PUT /api/users/grace '{"username":"Grace Hopper"}' >/dev/null
call alan PUT /api/users/alan '{"username":"Alan Turing"}' >/dev/null
call grace POST /api/posts '{"title":"Compilers for everyone","content":"Programs should read like English, and a compiler can make them. Here is how the first one came about, and what it taught us about who gets to write software."}' | id_of >/dev/null
call alan POST /api/posts '{"title":"Can machines think?","content":"I propose to consider the question. Instead of defining the terms, consider a game: an interrogator, a person and a machine, and a conversation by teleprinter."}' | id_of >/dev/null
post=$(call ada POST /api/posts '{"title":"Welcome to the blog","content":"A short tour of what the blog does: the front page lists the newest posts with their counts, and every post has its own page with comments and likes.\n\n| Page | What it shows |\n|------|---------------|\n| Front page | the newest posts |\n| Post page | the post, its comments and likes |\n\nPosts are *Markdown*: tables, ~~mistakes~~ corrections, and links such as <https://learn.microsoft.com/azure/cosmos-db/>."}' | id_of)
call grace POST "/api/posts/$post/comments" '{"content":"Lovely start. The table renders nicely."}' >/dev/null
call alan POST "/api/posts/$post/comments" '{"content":"Looking forward to the next one."}' >/dev/null
call grace POST "/api/posts/$post/likes" >/dev/null
call alan POST "/api/posts/$post/likes" >/dev/null

# The front page is the change feed's copy: wait until it lists the newest post.
until curl --silent -H 'accept: text/html' "$base/" | grep -q 'Welcome to the blog'; do
    sleep 0.1
done

flags="--headless=new --no-sandbox --disable-dev-shm-usage"
for page in front:/ post:/posts/$post; do
    name=${page%%:*}
    "$lighthouse" "$base${page#*:}" --quiet --chrome-flags="$flags" \
        --only-categories=performance,accessibility,best-practices,seo \
        --output=json --output-path="$OUT/$name.json" >/dev/null
    node -e '
        const report = require(process.argv[1]);
        const score = (id) => Math.round(report.categories[id].score * 100);
        console.log(`${process.argv[2].padEnd(10)} performance ${score("performance")}  ` +
            `accessibility ${score("accessibility")}  best-practices ${score("best-practices")}  ` +
            `seo ${score("seo")}`);
    ' "$OUT/$name.json" "$name page"
done
echo "reports: $OUT" >&2
