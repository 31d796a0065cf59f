#!/usr/bin/env node
/**
 * The launcher of `npm start` and `npm run start:dist`. Ctrl-C in a terminal signals the whole foreground process group; the
 * embedded PostgreSQL that the gateway spawns would get it too and shut down at once, while requests
 * still drain. So the gateway runs in its own process group (with its PostgreSQL and chains), and
 * this launcher relays the signal to it alone: the gateway then stops everything in order.
 *
 * A launcher that dies without relaying anything (SIGKILL to npm's process group, a closed terminal
 * that kills the group) must not leave the gateway running alone, holding its port and chains: the
 * gateway gets an IPC channel to this process, and when the channel closes (the launcher is gone,
 * however it died) it shuts down as on SIGTERM (src/main.ts).
 */
/* global require, process, __dirname */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS script */
'use strict';
const { spawn } = require('node:child_process');
const { join } = require('node:path');

// `npm start` runs the dev build (.build/); `npm run start:dist` passes --dist for the release build (dist/).
const dist = process.argv[2] === '--dist';
const main = join(__dirname, '..', dist ? 'dist' : '.build', 'src', 'main.js');
const child = spawn(process.execPath, ['--enable-source-maps', main, ...process.argv.slice(dist ? 3 : 2)], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  detached: true,
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
