// idp: oidc-provider (OpenID Certified) as the company's identity provider for
// tests/scripts/oidc.sh.  Env: PORT, KEYS (file: {"keys": [private JWKs]}, the first of an
// alg signs), USERS (file: {"alice": {"email", "groups"}}; read on every token, so a group
// change takes effect on the next one), AUDIENCE (fleetd's resource indicator), ALG.
// CONSOLE_REDIRECT (optional): the console's own URL, registered for the public client
// fleet-console-web (no secret, PKCE required) whose token endpoint answers CORS requests
// from that URL's origin only.  AUTH_LOG (optional file): one line of JSON per authorization
// request's query.  Logins: /interaction/UID logs in the user named by login_hint, or, with
// none, shows a form asking for the user name (a browser's login); consent grants the
// requested scopes (no devInteractions).  Prints "ready" when listening.
import fs from 'node:fs';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const audience = process.env.AUDIENCE;
const resources = [audience, 'https://other.example'];	// the second: a wrong audience
const consoleRedirect = process.env.CONSOLE_REDIRECT;
const consoleOrigin = consoleRedirect && new URL(consoleRedirect).origin;
const users = () => JSON.parse(fs.readFileSync(process.env.USERS, 'utf8'));

const provider = new Provider(issuer, {
	clients: [{
		client_id: 'fleet-console',
		application_type: 'native',
		token_endpoint_auth_method: 'none',
		redirect_uris: ['http://127.0.0.1/callback'],
		grant_types: ['authorization_code', 'refresh_token'],
		response_types: ['code'],
	}, ...(consoleRedirect ? [{
		client_id: 'fleet-console-web',
		application_type: 'web',
		token_endpoint_auth_method: 'none',
		redirect_uris: [consoleRedirect],
		grant_types: ['authorization_code', 'refresh_token'],
		response_types: ['code'],
	}] : [])],
	pkce: { required: () => true },
	// oidc-provider keeps offline_access only with prompt=consent (OIDC Core 11); like many
	// company IdPs, this one gives the console a refresh token without asking again
	issueRefreshToken: async (ctx, client, code) => client.grantTypeAllowed('refresh_token') &&
		(code.scopes.has('offline_access') || client.clientId === 'fleet-console-web'),
	clientBasedCORS: (ctx, origin, client) =>
		client.clientId === 'fleet-console-web' && origin === consoleOrigin,
	jwks: JSON.parse(fs.readFileSync(process.env.KEYS, 'utf8')),
	cookies: { keys: ['tests-only-cookie-key'] },
	scopes: ['openid', 'email', 'offline_access', 'fleet'],
	claims: { openid: ['sub'], email: ['email'], fleet: ['groups'] },
	findAccount: async (ctx, id) => {
		const u = users()[id];
		return u && { accountId: id, claims: async () => ({ sub: id, email: u.email, groups: u.groups }) };
	},
	extraTokenClaims: async (ctx, token) => {
		const u = token.accountId && users()[token.accountId];
		return u ? { email: u.email, groups: u.groups } : undefined;
	},
	interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
	features: {
		devInteractions: { enabled: false },
		revocation: { enabled: true },	// the console revokes its refresh token on log out
		resourceIndicators: {
			enabled: true,
			defaultResource: () => audience,
			useGrantedResource: () => true,
			getResourceServerInfo: (ctx, resource) => {
				if (!resources.includes(resource)) throw new errors.InvalidTarget();
				return {
					scope: 'fleet', audience: resource, accessTokenTTL: 300,
					accessTokenFormat: 'jwt', jwt: { sign: { alg: process.env.ALG || 'RS256' } },
				};
			},
		},
	},
	ttl: { AccessToken: 300, RefreshToken: 3600, Session: 3600, Interaction: 600, Grant: 3600 },
});

async function interaction(req, res) {
	const d = await provider.interactionDetails(req, res);
	if (d.prompt.name === 'login') {
		let id = d.params.login_hint;
		if (!id && req.method === 'GET') {
			res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
				`<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form method="post" action="/interaction/${d.uid}"><label>User <input name="user" id="user"></label>
<button type="submit" id="signin">Sign in</button></form>`);
			return;
		}
		if (!id) {
			let body = '';
			for await (const c of req) body += c;
			id = new URLSearchParams(body).get('user');
		}
		if (!users()[id]) {
			res.writeHead(403).end('no such user');
			return;
		}
		await provider.interactionFinished(req, res, { login: { accountId: id } },
			{ mergeWithLastSubmission: false });
		return;
	}
	const grant = d.grantId ? await provider.Grant.find(d.grantId) :
		new provider.Grant({ accountId: d.session.accountId, clientId: d.params.client_id });
	const { missingOIDCScope = [], missingResourceScopes = {} } = d.prompt.details;
	grant.addOIDCScope(missingOIDCScope.join(' '));
	for (const [r, scopes] of Object.entries(missingResourceScopes))
		grant.addResourceScope(r, scopes.join(' '));
	const grantId = await grant.save();
	await provider.interactionFinished(req, res, { consent: { grantId } },
		{ mergeWithLastSubmission: true });
}

const handler = provider.callback();
http.createServer((req, res) => {
	if (process.env.AUTH_LOG && req.url.startsWith('/auth?'))
		fs.appendFileSync(process.env.AUTH_LOG, JSON.stringify(Object.fromEntries(
			new URL(req.url, issuer).searchParams)) + '\n');
	if (req.url.startsWith('/interaction/')) {
		interaction(req, res).catch((e) => res.writeHead(500).end(String(e)));
		return;
	}
	handler(req, res);
}).listen(port, '127.0.0.1', () => console.log('ready'));
