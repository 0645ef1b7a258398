#!/usr/bin/env node
// The package registry this project is built behind serves only the platform binaries of the machines it
// runs on (e.g. @swc/core-linux-x64-gnu, not @swc/core-darwin-arm64). npm then writes a package-lock.json
// without the other platforms' optional packages, and `npm ci` refuses that lock as out of sync.
// This adds the missing optional platform entries, with the os/cpu/libc their names state, so that `npm
// ci` skips them on other platforms as it would normally. Run it after `npm install` changes the lock:
//   node scripts/fill-lockfile-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openbsd', 'sunos', 'aix'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64'];

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `${path ? `${path}/` : ''}node_modules/${name}`.replace(/^node_modules\/(.+\/node_modules\/)/, '$1');
    const hoisted = `node_modules/${name}`;
    if (packages[key] || packages[hoisted]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.find((p) => CPU.includes(p));
    if (!os || !cpu) continue; // not a platform package: leave it to npm
    const libc = parts.includes('musl') ? 'musl' : parts.includes('gnu') || parts.includes('gnueabihf') ? 'glibc' : undefined;
    packages[hoisted] = { version, cpu: [cpu], optional: true, os: [os], ...(libc && os === 'linux' ? { libc: [libc] } : {}) };
    added += 1;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: ${added} optional platform entr${added === 1 ? 'y' : 'ies'} added`);
