#!/usr/bin/env node
// The command lives in the compiled server package; this package only gives npm a bin to link.
await import("../../dist/src/cli.js");
