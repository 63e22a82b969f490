#!/usr/bin/env node
'use strict';
require('../dist/src/main.js')
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
    // A failed start must end the process even if something it began (the probe server, a
    // watch) is still open; the grace lets the last log lines reach a piped stdout.
    if (code !== 0) setTimeout(() => process.exit(code), 1000).unref();
  });
