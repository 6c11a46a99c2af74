// login: a user's tokens from tests/oidc/idp.mjs, the way a browser gets them — the
// authorization-code flow with PKCE followed through its redirects, then the token
// endpoint.  `node login.mjs login USER RESOURCE` or `node login.mjs refresh TOKEN RESOURCE`;
// env ISSUER.  Prints the token endpoint's JSON answer (access_token, refresh_token).
import crypto from 'node:crypto';

const [cmd, arg, resource] = process.argv.slice(2);
const issuer = process.env.ISSUER;
const client_id = 'fleet-console', redirect_uri = 'http://127.0.0.1/callback';
const jar = new Map();

async function get(url) {
	const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
	const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
	for (const c of res.headers.getSetCookie()) {
		const kv = c.split(';')[0], i = kv.indexOf('=');
		if (kv.slice(i + 1) === '') jar.delete(kv.slice(0, i));
		else jar.set(kv.slice(0, i), kv.slice(i + 1));
	}
	return res;
}

async function token(params) {
	const res = await fetch(`${issuer}/token`, {
		method: 'POST', body: new URLSearchParams({ client_id, resource, ...params }),
	});
	const body = await res.json();
	if (res.status !== 200) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
	return body;
}

async function login(user) {
	const verifier = crypto.randomBytes(32).toString('base64url');
	const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
	let url = `${issuer}/auth?` + new URLSearchParams({
		client_id, redirect_uri, response_type: 'code', scope: 'openid email offline_access fleet',
		resource, code_challenge: challenge, code_challenge_method: 'S256', login_hint: user,
		prompt: 'consent', state: crypto.randomBytes(8).toString('hex'),
	});
	for (let hops = 0; !url.startsWith(redirect_uri); hops++) {
		const res = await get(url);
		const loc = res.headers.get('location');
		if (!loc || hops > 10) throw new Error(`no redirect from ${url}: ${res.status} ${await res.text()}`);
		url = new URL(loc, issuer).href;
	}
	const q = new URL(url).searchParams;
	if (!q.get('code')) throw new Error(`login refused: ${q.get('error')} ${q.get('error_description')}`);
	return token({ grant_type: 'authorization_code', code: q.get('code'), redirect_uri, code_verifier: verifier });
}

const out = cmd === 'refresh' ? await token({ grant_type: 'refresh_token', refresh_token: arg }) :
	await login(arg);
console.log(JSON.stringify(out));
