#!/usr/bin/env node
'use strict';
require('@outrigger/kube/without-api').runMain(require('../dist/src/main.js').main);
