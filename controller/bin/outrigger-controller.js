#!/usr/bin/env node
'use strict';
require('@outrigger/kube').runMain(require('../dist/src/main.js').main);
