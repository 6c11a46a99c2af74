// oidc_console.test.js: "Log in with SSO" in Debian's chromium, driven by playwright-core,
// for tests/scripts/oidc_console.sh.  Env: FLEET_URL, ISSUER, OWN_JOB, OTHER_JOB, AUTH_LOG
// (the provider's log of authorization requests).  The console fetches the discovery
// document, sends the browser to the provider with PKCE (S256), state and nonce; alice signs
// in at the provider's form; back at the console the code is exchanged at the token endpoint
// (CORS), her team's job is listed, another team's job is a 404, a refresh token renews the
// access token, log out ends it all.  No CSP violation, no page error.
'use strict';

const fs = require('fs');
const { chromium } = require('playwright-core');

const URL0 = process.env.FLEET_URL;
const ISSUER = process.env.ISSUER;
const failures = [];
let step = 'start';
let lastError = '';

function check(cond, msg) {
  if (!cond) { failures.push(`${step}: ${msg}`); console.error(`FAIL ${step}: ${msg}`); }
  else console.log(`ok   ${step}: ${msg}`);
}

async function main() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  try {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(30000);
    const csp = [], authReqs = [], tokenReqs = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) csp.push(m.text()); });
    page.on('console', (m) => { lastError += m.text() + ' | '; });
    page.on('requestfailed', (r) => { lastError += 'failed ' + r.url() + ' ' + (r.failure() || {}).errorText + ' | '; });
    page.on('pageerror', (e) => check(false, 'page error: ' + e.message));
    page.on('request', (r) => {
      if (r.url().startsWith(ISSUER + '/auth?')) authReqs.push(new URL(r.url()).searchParams);
      if (r.url() === ISSUER + '/token') tokenReqs.push(new URLSearchParams(r.postData() || ''));
    });

    step = 'login page';
    await page.goto(URL0 + '/#/jobs');
    await page.waitForSelector('#sso-login:visible');
    check(await page.isVisible('#token'), 'the pasted-token login stays');

    step = 'sso';
    await page.click('#sso-login');
    await page.waitForURL((u) => u.href.startsWith(ISSUER + '/interaction/')).catch(async (e) => {
      lastError += 'login-error: ' + await page.textContent('#login-error');
      throw e;
    });
    check(authReqs.length === 1, `one authorization request (${authReqs.length})`);
    const q = authReqs[0] || new URLSearchParams();
    check(q.get('code_challenge_method') === 'S256', `code_challenge_method=S256 (${q.get('code_challenge_method')})`);
    check(/^[A-Za-z0-9_-]{43}$/.test(q.get('code_challenge') || ''), 'a 43-character S256 code_challenge');
    check((q.get('state') || '').length >= 32 && (q.get('nonce') || '').length >= 32, 'state and nonce');
    check(q.get('client_id') === 'fleet-console-web' && q.get('redirect_uri') === URL0 + '/',
      `client_id and the console's own URL as redirect_uri (${q.get('redirect_uri')})`);
    const logged = fs.readFileSync(process.env.AUTH_LOG, 'utf8').trim().split('\n').map(JSON.parse);
    check(logged.some((l) => l.code_challenge_method === 'S256' && l.code_challenge === q.get('code_challenge')),
      'the provider received the S256 challenge');
    await page.fill('#user', 'alice');
    await page.click('#signin');
    await page.waitForURL((u) => u.href.startsWith(URL0 + '/'));
    await page.waitForSelector('#nav:not([hidden])');
    check(!page.url().includes('code='), `the code left the URL (${page.url()})`);
    const tq = tokenReqs[0] || new URLSearchParams();
    check(tq.get('grant_type') === 'authorization_code' && (tq.get('code_verifier') || '').length >= 43 &&
      !tq.has('client_secret'), 'code exchanged with the verifier, no secret');
    check(/alice@example\.com/.test(await page.textContent('#who')), 'whoami names alice');
    check(await page.evaluate(() => sessionStorage.getItem('fleet.refresh') !== null), 'refresh token kept in the tab');

    step = 'jobs';
    if (!page.url().includes('#/jobs')) await page.evaluate(() => { location.hash = '#/jobs'; });
    await page.waitForSelector(`[data-job="${process.env.OWN_JOB}"]`);
    check(true, 'her team\'s job is listed');
    check(await page.$(`[data-job="${process.env.OTHER_JOB}"]`) === null, 'the other team\'s job is not');
    const other = page.waitForResponse((r) => r.url() === `${URL0}/v1/jobs/${process.env.OTHER_JOB}`);
    await page.evaluate((id) => { location.hash = '#/jobs/' + id; }, process.env.OTHER_JOB);
    check((await other).status() === 404, 'the other team\'s job answers 404');
    await page.waitForSelector('#view .error');

    step = 'refresh';
    const before = await page.evaluate(() => sessionStorage.getItem('fleet.token'));
    // two at once (as two 401s would ask): one refresh_token grant, both succeed
    const renewed = await page.evaluate(async () => (await Promise.all([ssoRefresh(), ssoRefresh()])).every(Boolean));
    const after = await page.evaluate(() => sessionStorage.getItem('fleet.token'));
    check(renewed && after && after !== before, 'the refresh token renews the access token');
    check(tokenReqs.filter((t) => t.get('grant_type') === 'refresh_token').length === 1, 'one refresh_token grant at the token endpoint');
    await page.evaluate(() => { location.hash = '#/jobs'; });
    await page.waitForSelector(`[data-job="${process.env.OWN_JOB}"]`);
    check(true, 'the renewed token lists her jobs');

    step = 'logout';
    const rt = await page.evaluate(() => sessionStorage.getItem('fleet.refresh'));
    const revoked = page.waitForResponse((r) => r.url() === ISSUER + '/token/revocation');
    await page.click('#logout');
    check((await revoked).status() === 200, 'the refresh token revoked at the provider');
    const again = await fetch(ISSUER + '/token', { method: 'POST', body: new URLSearchParams({
      client_id: 'fleet-console-web', grant_type: 'refresh_token', refresh_token: rt }) });
    check(again.status === 400, `the revoked refresh token is refused (${again.status})`);
    await page.waitForSelector('#login:not([hidden])');
    check(await page.evaluate(() => sessionStorage.getItem('fleet.token') === null &&
      sessionStorage.getItem('fleet.refresh') === null), 'tokens gone from the tab');

    step = 'forged callback';
    await page.goto(URL0 + '/?code=forged&state=forged');
    await page.waitForFunction(() => /unknown state/.test(document.getElementById('login-error').textContent));
    check(!page.url().includes('code='), 'a callback of an unknown state is refused and leaves the URL');
    check(await page.evaluate(() => sessionStorage.getItem('fleet.token') === null), 'no token from it');
    check(csp.length === 0, 'no CSP violation: ' + csp.join(' | '));
  } finally {
    await browser.close();
  }
}

main().then(() => {
  if (failures.length) { console.error(`${failures.length} failure(s)`); process.exit(1); }
  console.log('oidc_console.test.js: all checks passed');
}, (e) => { console.error(`FAIL ${step}: ${e.stack || e}`); console.error('console said: ' + lastError); process.exit(1); });
