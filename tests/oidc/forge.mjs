// forge: keys and tokens that the real provider would not issue, for tests/scripts/oidc.sh.
//   node forge.mjs key ALG KID            a private JWK (for idp.mjs's KEYS)
//   node forge.mjs KIND KEYS SUB GROUPS   a token: expired | other-key | none | hs256 |
//                                         wrong-iss | short (valid, expires in 6 s)
//                                         (KEYS' first key signs; env ISSUER, AUDIENCE)
import fs from 'node:fs';
import * as jose from 'jose';

const [kind, a1, a2, a3] = process.argv.slice(2);
const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');

if (kind === 'key') {
	const { privateKey } = await jose.generateKeyPair(a1, { extractable: true });
	console.log(JSON.stringify({ ...(await jose.exportJWK(privateKey)), kid: a2, alg: a1, use: 'sig' }));
	process.exit(0);
}
const real = JSON.parse(fs.readFileSync(a1, 'utf8')).keys[0];
const now = Math.floor(Date.now() / 1000);
const claims = {
	iss: process.env.ISSUER, aud: process.env.AUDIENCE, sub: a2, email: `${a2}@example.com`,
	groups: a3.split(','), iat: now, exp: now + 300, jti: `forged-${kind}`,
};
const header = { alg: real.alg, kid: real.kid, typ: 'at+jwt' };
let token;
switch (kind) {
case 'expired':
	token = await new jose.SignJWT({ ...claims, iat: now - 900, exp: now - 600 })
		.setProtectedHeader(header).sign(await jose.importJWK(real, real.alg));
	break;
case 'short':	// as the provider would sign it, with a short life
	token = await new jose.SignJWT({ ...claims, exp: now + 6 })
		.setProtectedHeader(header).sign(await jose.importJWK(real, real.alg));
	break;
case 'wrong-iss':
	token = await new jose.SignJWT({ ...claims, iss: 'http://127.0.0.1:1' })
		.setProtectedHeader(header).sign(await jose.importJWK(real, real.alg));
	break;
case 'other-key': {	// the real kid, another key's signature
	const { privateKey } = await jose.generateKeyPair(real.alg);
	token = await new jose.SignJWT(claims).setProtectedHeader(header).sign(privateKey);
	break;
}
case 'none':
	token = `${b64({ alg: 'none', kid: real.kid })}.${b64(claims)}.`;
	break;
case 'hs256': {	// HMAC keyed with the public key as published (PEM), the classic confusion
	const { d, p, q, dp, dq, qi, ...pub } = real;
	const pem = await jose.exportSPKI(await jose.importJWK(pub, real.alg, { extractable: true }));
	token = await new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: real.kid })
		.sign(Buffer.from(pem));
	break;
}
default:
	throw new Error(`unknown kind ${kind}`);
}
console.log(token);
