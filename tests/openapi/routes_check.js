// routes_check: the route table of api/router.c and the operations of api/openapi.yaml must
// describe the same API — same methods and path templates (parameter names included), public
// routes with `security: []`, the role of every other route in `x-fleetd-role`, and a JSON
// request body exactly where the route takes one (R_BODY).  Operations the spec describes
// before their handler lands are listed in pending_routes.txt; a listed route that is now in
// the router, or no longer in the spec, is an error too, so the list only shrinks.
// Usage: node routes_check.js <router.c> <openapi.yaml> <pending_routes.txt>
'use strict';

const fs = require('fs');
const YAML = require('yaml');

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

function routerRoutes(text) {
  const table = /const struct route routes\[\]\s*=\s*\{([\s\S]*?)\n\};/.exec(text);
  if (!table) throw new Error('no `const struct route routes[] = {...};` table found');
  const body = table[1].replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const re = /\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*,\s*(ROLE_\w+)\s*,\s*([^}]*)\}/g;
  const routes = [];
  for (const m of body.matchAll(re)) {
    const flags = m[5].split('|').map((f) => f.trim()).filter((f) => f && f !== '0');
    routes.push({ method: m[1], path: m[2], handler: m[3], role: m[4], flags });
  }
  // Every `{ "` entry must have been understood: a format change must not hide routes.
  const entries = (body.match(/\{\s*"/g) || []).length;
  if (entries !== routes.length) {
    throw new Error(`parsed ${routes.length} of ${entries} route entries; update routes_check.js`);
  }
  return routes;
}

function specOperations(spec) {
  const ops = new Map();
  for (const [path, item] of Object.entries(spec.paths || {})) {
    for (const m of METHODS) {
      if (item[m]) ops.set(`${m.toUpperCase()} ${path}`, item[m]);
    }
  }
  return ops;
}

function pendingList(text) {
  return text.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
    .map((l) => l.replace(/\s+/g, ' '));
}

function main() {
  const [routerPath, specPath, pendingPath] = process.argv.slice(2);
  if (!routerPath || !specPath || !pendingPath) {
    console.error('usage: node routes_check.js <router.c> <openapi.yaml> <pending_routes.txt>');
    process.exit(2);
  }
  const routes = routerRoutes(fs.readFileSync(routerPath, 'utf8'));
  const spec = YAML.parse(fs.readFileSync(specPath, 'utf8'));
  const ops = specOperations(spec);
  const pending = new Set(pendingList(fs.readFileSync(pendingPath, 'utf8')));
  const errors = [];
  const inRouter = new Set();

  for (const r of routes) {
    const key = `${r.method} ${r.path}`;
    if (inRouter.has(key)) errors.push(`${key}: twice in the route table`);
    inRouter.add(key);
    const op = ops.get(key);
    if (!op) {
      errors.push(`${key}: in ${routerPath} (${r.handler}) but not in ${specPath}`);
      continue;
    }
    const isPublic = r.flags.includes('R_PUBLIC');
    const open = Array.isArray(op.security) && op.security.length === 0;
    if (isPublic !== open) {
      errors.push(`${key}: ${isPublic ? 'public route needs `security: []`' : 'authenticated route must not have `security: []`'}`);
    }
    const role = r.role === 'ROLE_NONE' ? undefined : r.role.slice(5).toLowerCase();
    if (op['x-fleetd-role'] !== role) {
      errors.push(`${key}: x-fleetd-role is ${op['x-fleetd-role'] || 'absent'}, the router requires ${role || 'none'}`);
    }
    const takesBody = r.flags.includes('R_BODY') || r.flags.includes('R_BODY_OPT');
    const hasBody = Boolean(op.requestBody && (op.requestBody.content || {})['application/json']);
    if (takesBody !== hasBody) {
      errors.push(`${key}: ${takesBody ? 'takes a JSON body (R_BODY) but the spec has no requestBody' : 'the spec has a requestBody but the route takes none (no R_BODY)'}`);
    }
    if (pending.has(key)) {
      errors.push(`${key}: now in the router; remove it from ${pendingPath}`);
    }
  }
  for (const key of ops.keys()) {
    if (!inRouter.has(key) && !pending.has(key)) {
      errors.push(`${key}: in ${specPath} but not in ${routerPath} (nor in ${pendingPath})`);
    }
  }
  for (const key of pending) {
    if (!ops.has(key)) errors.push(`${key}: listed in ${pendingPath} but not in ${specPath}`);
  }
  if (errors.length) {
    for (const e of errors) console.error(`FAIL ${e}`);
    console.error(`routes_check: ${errors.length} problem(s)`);
    process.exit(1);
  }
  console.log(`routes_check: ${routes.length} routes match the spec (${pending.size} described ahead of their handlers)`);
}

try {
  main();
} catch (e) {
  console.error(`routes_check: ${e.message}`);
  process.exit(1);
}
