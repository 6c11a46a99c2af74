// sdk.js STATE_DIR — the Azure SDK for JavaScript and @kubernetes/client-node against a
// running cloudsim: every check prints "ok - name" or "not ok - name: why"; exit 1 on any
// failure. Negative cases assert the SDK's own typed error (RestError, AuthenticationError).
"use strict";
const fs = require("fs");
const { ClientSecretCredential, ClientAssertionCredential } = require("@azure/identity");
const { ContainerServiceClient } = require("@azure/arm-containerservice");
const { ComputeManagementClient } = require("@azure/arm-compute");
const { ManagedServiceIdentityClient } = require("@azure/arm-msi");
const { RestError } = require("@azure/core-rest-pipeline");
const k8s = require("@kubernetes/client-node");

const S = process.argv[2];
const env = Object.fromEntries(fs.readFileSync(`${S}/fleetd.env`, "utf8").split("\n")
	.filter((l) => l.includes("=") && !l.startsWith("#"))
	.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
const base = `https://127.0.0.1:${fs.readFileSync(`${S}/kube_port`, "utf8").trim()}`;
const clusters = JSON.parse(fs.readFileSync(`${S}/clusters.json`, "utf8")).clusters;
const aks = clusters.find((c) => c.provider === "aks");
// the Kubernetes checks use the AKS cluster's API server: kubectl works on the GKE one
// at the same time
const kubeTarget = clusters.find((c) => c.provider === "aks");
const ARM = "https://management.azure.com/.default";
const XCHG = "api://AzureADTokenExchange/.default";
let failed = 0;

function ok(name) { console.log(`ok - ${name}`); }
function bad(name, why) { failed++; console.log(`not ok - ${name}: ${why}`); }
async function check(name, fn) {
	try { await fn(); ok(name); } catch (e) { bad(name, e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e); }
}
function assert(c, msg) { if (!c) throw new Error(msg); }
// The call must fail with an error of class cls whose text matches re.
async function fails(name, fn, cls, re) {
	try {
		await fn();
		bad(name, "succeeded");
	} catch (e) {
		const text = `${e.name} ${e.code || ""} ${e.statusCode || ""} ${e.message}`;
		if (cls && !(e instanceof cls)) return bad(name, `wrong error class ${e.constructor.name}: ${text.slice(0, 300)}`);
		if (re && !re.test(text)) return bad(name, `unexpected error: ${text.slice(0, 300)}`);
		ok(name);
	}
}
async function all(it) { const out = []; for await (const x of it) out.push(x); return out; }

const idOpts = { authorityHost: `${base}/azure/login`, disableInstanceDiscovery: true };
const armOpts = { endpoint: `${base}/arm`, credentialScopes: [ARM] };

async function azure() {
	const tenant = aks.iam.control_plane.tenant_id;
	const fleetd = new ClientSecretCredential(tenant, env.FLEETD_AZURE_CLIENT_ID,
		env.FLEETD_AZURE_CLIENT_SECRET, idOpts);
	await check("azure: client-credential token (ARM scope)", async () => {
		const t = await fleetd.getToken(ARM);
		assert(t.token && t.expiresOnTimestamp > Date.now(), "no token");
	});
	await fails("azure: wrong client secret is AADSTS7000215",
		() => new ClientSecretCredential(tenant, env.FLEETD_AZURE_CLIENT_ID, "wrong", idOpts).getToken(ARM),
		Error, /AADSTS7000215/);
	await fails("azure: unknown tenant is AADSTS90002",
		() => new ClientSecretCredential("00000000-0000-4000-8000-000000000000", env.FLEETD_AZURE_CLIENT_ID,
			env.FLEETD_AZURE_CLIENT_SECRET, idOpts).getToken(ARM), Error, /AADSTS90002|endpoints_resolution/);
	// workload identity federation: fleetd's token for the exchange audience is the assertion
	const cp = aks.iam.control_plane;
	const fed = new ClientAssertionCredential(cp.tenant_id, cp.client_id,
		async () => (await fleetd.getToken(XCHG)).token, idOpts);
	await check("azure: federated token for the control-plane identity", async () => {
		const t = await fed.getToken(ARM);
		assert(t.token, "no token");
	});
	await fails("azure: federated token with a foreign assertion is AADSTS70021 / 50027",
		() => new ClientAssertionCredential(cp.tenant_id, cp.client_id, async () => "not-a-token",
			idOpts).getToken(ARM), Error, /AADSTS50027|AADSTS70021/);

	const cs = new ContainerServiceClient(fed, aks.subscription, armOpts);
	await check("azure: managed cluster get", async () => {
		const mc = await cs.managedClusters.get(aks.resource_group, aks.name);
		assert(mc.name === aks.name && mc.location === aks.region, JSON.stringify(mc).slice(0, 200));
	});
	await check("azure: agent pools list follows nextLink", async () => {
		const pools = await all(cs.agentPools.list(aks.resource_group, aks.name));
		assert(pools.length === aks.pools.length, `${pools.length} pools, want ${aks.pools.length}`);
		assert(pools.every((p) => p.vmSize && p.count >= 0), "pool without vmSize/count");
	});
	await fails("azure: missing agent pool is RestError 404",
		() => cs.agentPools.get(aks.resource_group, aks.name, "nope"), RestError, /404/);
	await fails("azure: missing cluster is RestError ResourceNotFound",
		() => cs.managedClusters.get(aks.resource_group, "nope"), RestError, /ResourceNotFound/);
	const cc = new ComputeManagementClient(fed, aks.subscription, armOpts);
	await check("azure: compute SKUs (filter, restrictions)", async () => {
		const skus = await all(cc.resourceSkus.list({ filter: `location eq '${aks.region}'` }));
		assert(skus.length >= 3, `${skus.length} skus`);
		assert(skus.some((s) => (s.restrictions || []).length > 0), "no restricted sku");
	});
	await check("azure: compute usages follow nextLink", async () => {
		const u = await all(cc.usage.list(aks.region));
		assert(u.length > 2 && u.some((x) => x.name.value === "cores"), JSON.stringify(u).slice(0, 200));
	});
	const mc = new ManagedServiceIdentityClient(fed, aks.subscription, armOpts);
	await check("azure: managed identity get (clientId, principalId)", async () => {
		const mi = await mc.userAssignedIdentities.get(aks.resource_group, cp.resource_id.split("/").pop());
		assert(mi.clientId === cp.client_id && mi.principalId === cp.principal_id, JSON.stringify(mi));
	});
	await check("azure: managed identities list by resource group and subscription", async () => {
		const rg = await all(mc.userAssignedIdentities.listByResourceGroup(aks.resource_group));
		const sub = await all(mc.userAssignedIdentities.listBySubscription());
		assert(rg.length >= 2 && sub.length >= rg.length, `${rg.length} / ${sub.length}`);
	});
	await check("azure: federated identity credentials list", async () => {
		const f = await all(mc.federatedIdentityCredentials.list(aks.resource_group, cp.resource_id.split("/").pop()));
		assert(f.length >= 1 && f[0].issuer && f[0].subject, JSON.stringify(f));
	});
	// a token of fleetd's own tenant on a subscription of another tenant
	const other = new ContainerServiceClient(new ClientSecretCredential(env.FLEETD_AZURE_TENANT_ID,
		env.FLEETD_AZURE_CLIENT_ID, env.FLEETD_AZURE_CLIENT_SECRET, idOpts), aks.subscription, armOpts);
	if (env.FLEETD_AZURE_TENANT_ID !== cp.tenant_id)
		await fails("azure: token of the wrong tenant is RestError InvalidAuthenticationTokenTenant",
			() => other.managedClusters.get(aks.resource_group, aks.name), RestError, /InvalidAuthenticationTokenTenant/);
}

function kubeConfig(c, token) {
	const kc = new k8s.KubeConfig();
	kc.loadFromOptions({
		clusters: [{ name: c.name, server: c.api_server, caFile: c.ca_file }],
		users: [{ name: "u", token: token || c.token }],
		contexts: [{ name: "x", cluster: c.name, user: "u", namespace: "default" }],
		currentContext: "x",
	});
	return kc;
}

// Collects watch events until pred(events) holds or ms pass.
function watchUntil(kc, path, query, pred, ms) {
	return new Promise((resolve, reject) => {
		const evs = [];
		let req, done = false;
		const finish = (err) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			if (req && req.abort) req.abort();
			err ? reject(err) : resolve(evs);
		};
		const timer = setTimeout(() => finish(new Error(`timeout; got ${evs.map((e) => e.type).join(",")}`)), ms);
		new k8s.Watch(kc).watch(path, query, (type, obj) => {
			evs.push({ type, obj });
			if (pred(evs)) finish();
		}, (err) => { if (err && !done) finish(err); else finish(pred(evs) ? null : new Error("watch ended early")); })
			.then((r) => { req = r; }, finish);
	});
}

async function kube() {
	const kc = kubeConfig(kubeTarget);
	const core = kc.makeApiClient(k8s.CoreV1Api);
	const custom = kc.makeApiClient(k8s.CustomObjectsApi);
	await check("kube(client-node): list nodes, pods, namespaces", async () => {
		const nodes = await core.listNode();
		assert(nodes.items.length > 0, "no nodes");
		const ns = await core.listNamespace();
		assert(ns.items.some((n) => n.metadata.name === "default"), "no default namespace");
		await core.listPodForAllNamespaces();
	});
	await fails("kube(client-node): bad token is ApiException 401",
		() => kubeConfig(kubeTarget, "wrong").makeApiClient(k8s.CoreV1Api).listNode(), k8s.ApiException, /401/);
	const list = await custom.listNamespacedCustomObject({ group: "ray.io", version: "v1",
		namespace: "default", plural: "rayclusters" });
	const rv = list.metadata.resourceVersion;
	const body = {
		apiVersion: "ray.io/v1", kind: "RayCluster",
		metadata: { name: "sdk-watch", namespace: "default" },
		spec: { headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{
			name: "ray-head", image: "rayproject/ray:2.41.0",
			resources: { requests: { cpu: "1", memory: "2Gi" }, limits: { cpu: "1", memory: "2Gi" } } }] } } } },
	};
	await check("kube(client-node): watch from the list's resourceVersion sees ADDED and DELETED", async () => {
		const w = watchUntil(kc, "/apis/ray.io/v1/namespaces/default/rayclusters",
			{ resourceVersion: rv, allowWatchBookmarks: true },
			(evs) => evs.some((e) => e.type === "DELETED" && e.obj.metadata.name === "sdk-watch"), 20000);
		await custom.createNamespacedCustomObject({ group: "ray.io", version: "v1", namespace: "default",
			plural: "rayclusters", body });
		await new Promise((r) => setTimeout(r, 300));
		await custom.deleteNamespacedCustomObject({ group: "ray.io", version: "v1", namespace: "default",
			plural: "rayclusters", name: "sdk-watch" });
		const evs = await w;
		const types = evs.filter((e) => e.type !== "BOOKMARK").map((e) => e.type);
		assert(types[0] === "ADDED", `first event ${types[0]}`);
		const added = evs.find((e) => e.type === "ADDED");
		assert(Number(added.obj.metadata.resourceVersion) > Number(rv), "event rv not after the list rv");
	});
	await check("kube(client-node): node watch without resourceVersion starts with ADDED", async () => {
		const evs = await watchUntil(kc, "/api/v1/nodes", {}, (e) => e.length > 0, 10000);
		assert(evs[0].type === "ADDED" && evs[0].obj.kind === "Node", JSON.stringify(evs[0]).slice(0, 200));
	});
	await check("kube(client-node): watch from an expired resourceVersion gets ERROR 410 Expired", async () => {
		const evs = await watchUntil(kc, "/api/v1/namespaces/default/events", { resourceVersion: "1" },
			(e) => e.some((x) => x.type === "ERROR"), 10000);
		const err = evs.find((e) => e.type === "ERROR").obj;
		assert(err.code === 410 && err.reason === "Expired", JSON.stringify(err));
	});
	await check("kube(client-node): informer lists then follows ray.io objects", async () => {
		const path = "/apis/ray.io/v1/namespaces/default/rayclusters";
		const inf = k8s.makeInformer(kc, path, () => custom.listNamespacedCustomObject({ group: "ray.io",
			version: "v1", namespace: "default", plural: "rayclusters" }));
		const seen = new Promise((resolve, reject) => {
			const t = setTimeout(() => reject(new Error("informer saw nothing")), 15000);
			inf.on("add", (o) => { if (o.metadata.name === "sdk-informer") { clearTimeout(t); resolve(); } });
			inf.on("error", (e) => { clearTimeout(t); reject(e); });
		});
		await inf.start();
		await custom.createNamespacedCustomObject({ group: "ray.io", version: "v1", namespace: "default",
			plural: "rayclusters", body: { ...body, metadata: { name: "sdk-informer", namespace: "default" } } });
		await seen;
		await inf.stop();
		await custom.deleteNamespacedCustomObject({ group: "ray.io", version: "v1", namespace: "default",
			plural: "rayclusters", name: "sdk-informer" });
	});
	await fails("kube(client-node): get of a missing RayJob is ApiException 404",
		() => custom.getNamespacedCustomObject({ group: "ray.io", version: "v1", namespace: "default",
			plural: "rayjobs", name: "nope" }), k8s.ApiException, /404/);
}

(async () => {
	await azure();
	await kube();
	console.log(failed ? `sdk: ${failed} failed` : "sdk: all passed");
	process.exit(failed ? 1 : 0);
})().catch((e) => { console.log(`not ok - sdk: ${e.stack}`); process.exit(1); });
