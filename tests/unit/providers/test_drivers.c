/* test_drivers: the pure parsers of the provider drivers and the Kubernetes client —
 * real answer shapes, paging tokens, quota arithmetic, free capacity per node, and every
 * truncation of each answer parsed without crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "providers/creds_int.h"
#include "providers/kube.h"
#include "providers/provider.h"
#include "tests/unit/providers/fake_server.h"

static const char *GKE_POOLS =
    "{\"nodePools\":[{\"name\":\"h100\",\"config\":{\"machineType\":\"a3-highgpu-8g\","
    "\"accelerators\":[{\"acceleratorCount\":\"8\",\"acceleratorType\":\"nvidia-h100-80gb\"}]},"
    "\"initialNodeCount\":2,\"autoscaling\":{\"enabled\":true,\"minNodeCount\":1,"
    "\"maxNodeCount\":6}},"
    "{\"name\":\"spot-l4\",\"config\":{\"machineType\":\"g2-standard-48\",\"spot\":true,"
    "\"accelerators\":[{\"acceleratorCount\":4,\"acceleratorType\":\"nvidia-l4\"}]},"
    "\"initialNodeCount\":1}],\"nextPageToken\":\"p2\"}";
static const char *GKE_POOLS2 =
    "{\"nodePools\":[{\"name\":\"v5p\",\"config\":{\"machineType\":\"ct5p-hightpu-4t\"},"
    "\"initialNodeCount\":4,\"placementPolicy\":{\"tpuTopology\":\"2x2x4\"}}]}";
static const char *GCE_REGION =
    "{\"name\":\"us-central1\",\"quotas\":[{\"metric\":\"NVIDIA_H100_GPUS\",\"limit\":64,"
    "\"usage\":16},{\"metric\":\"PREEMPTIBLE_NVIDIA_L4_GPUS\",\"limit\":8,\"usage\":12},"
    "{\"metric\":\"TPU_V5P_PODSLICE_CHIPS\",\"limit\":32.0,\"usage\":16.0}]}";
static const char *GCE_RES =
    "{\"items\":{\"zones/us-central1-a\":{\"reservations\":[{\"name\":\"r1\",\"status\":"
    "\"READY\",\"specificReservation\":{\"count\":\"3\",\"inUseCount\":\"1\","
    "\"instanceProperties\":{\"machineType\":\"a3-highgpu-8g\",\"guestAccelerators\":"
    "[{\"acceleratorType\":\"nvidia-h100-80gb\",\"acceleratorCount\":8}]}}}]},"
    "\"zones/us-central1-b\":{\"warning\":{\"code\":\"NO_RESULTS_ON_PAGE\"}}}}";

static void
test_gke(void **state)
{
	struct prov_pools p;
	struct err e = { 0 };
	char *next = NULL;

	(void)state;
	prov_pools_init(&p);
	assert_true(prov_gke_parse_node_pools(GKE_POOLS, strlen(GKE_POOLS), &p, &next, &e));
	assert_string_equal(next, "p2");
	free(next);
	assert_true(prov_gke_parse_node_pools(GKE_POOLS2, strlen(GKE_POOLS2), &p, &next, &e));
	assert_null(next);
	assert_true(prov_gke_parse_region(GCE_REGION, strlen(GCE_REGION), &p, &e));
	assert_true(prov_gke_parse_reservations(GCE_RES, strlen(GCE_RES), &p, &next, &e));
	assert_null(next);
	prov_gke_finish(&p);
	assert_int_equal(p.n, 3);
	assert_string_equal(p.v[0].name, "h100");
	assert_string_equal(p.v[0].accel_type, "nvidia-h100-80gb");
	assert_int_equal(p.v[0].accel_per_node, 8);
	assert_int_equal(p.v[0].nodes, 2);
	assert_int_equal(p.v[0].min_nodes, 1);
	assert_int_equal(p.v[0].max_nodes, 6);
	assert_true(p.v[0].autoscaling);
	assert_false(p.v[0].spot);
	assert_int_equal(p.v[0].quota_left, 48);
	assert_int_equal(p.v[0].reserved, 16);	/* (3 - 1) nodes x 8 */
	assert_true(p.v[1].spot);
	assert_int_equal(p.v[1].accel_per_node, 4);
	assert_int_equal(p.v[1].max_nodes, 1);
	assert_int_equal(p.v[1].quota_left, 0);	/* usage above limit */
	assert_string_equal(p.v[2].accel_type, "tpu-v5p-slice");
	assert_int_equal(p.v[2].accel_per_node, 4);
	assert_string_equal(p.v[2].tpu_topology, "2x2x4");
	assert_int_equal(p.v[2].quota_left, 16);
	assert_int_equal(p.pages, 4);
	prov_pools_cleanup(&p);
}

static const char *AKS_POOLS =
    "{\"value\":[{\"name\":\"h100\",\"properties\":{\"vmSize\":\"Standard_ND96isr_H100_v5\","
    "\"count\":2,\"enableAutoScaling\":true,\"minCount\":0,\"maxCount\":4,"
    "\"scaleSetPriority\":\"Regular\"}},{\"name\":\"spota100\",\"properties\":{\"vmSize\":"
    "\"Standard_NC24ads_A100_v4\",\"count\":3,\"scaleSetPriority\":\"Spot\"}}],"
    "\"nextLink\":\"http://x/arm/next\"}";
static const char *AKS_SKUS =
    "{\"value\":[{\"resourceType\":\"virtualMachines\",\"name\":\"Standard_ND96isr_H100_v5\","
    "\"family\":\"standardNDSH100v5Family\",\"capabilities\":[{\"name\":\"vCPUs\",\"value\":"
    "\"96\"},{\"name\":\"GPUs\",\"value\":\"8\"}],\"restrictions\":[]},"
    "{\"resourceType\":\"virtualMachines\",\"name\":\"Standard_NC24ads_A100_v4\",\"family\":"
    "\"StandardNCADSA100v4Family\",\"capabilities\":[{\"name\":\"vCPUs\",\"value\":\"24\"},"
    "{\"name\":\"GPUs\",\"value\":\"1\"}],\"restrictions\":[]},"
    "{\"resourceType\":\"disks\",\"name\":\"Premium_LRS\"}]}";
static const char *AKS_USAGES =
    "{\"value\":[{\"name\":{\"value\":\"cores\",\"localizedValue\":\"Total Regional vCPUs\"},"
    "\"currentValue\":300,\"limit\":1000,\"unit\":\"Count\"},{\"name\":{\"value\":"
    "\"standardNDSH100v5Family\"},\"currentValue\":192,\"limit\":480,\"unit\":\"Count\"},"
    "{\"name\":{\"value\":\"lowPriorityCores\"},\"currentValue\":72,\"limit\":100}]}";

static void
test_aks(void **state)
{
	struct prov_pools p;
	struct err e = { 0 };
	char *next = NULL;
	const char *restricted = "{\"value\":[{\"resourceType\":\"virtualMachines\",\"name\":"
	    "\"Standard_ND96isr_H100_v5\",\"capabilities\":[],\"restrictions\":[{\"type\":"
	    "\"Location\",\"values\":[\"eastus\"],\"reasonCode\":\"NotAvailableForSubscription\"}]}]}";

	(void)state;
	prov_pools_init(&p);
	/* skus first: answers arrive in any order */
	assert_true(prov_aks_parse_skus(AKS_SKUS, strlen(AKS_SKUS), "eastus", &p, &next, &e));
	assert_null(next);
	assert_true(prov_aks_parse_agent_pools(AKS_POOLS, strlen(AKS_POOLS), &p, &next, &e));
	assert_string_equal(next, "http://x/arm/next");
	free(next);
	assert_true(prov_aks_parse_usages(AKS_USAGES, strlen(AKS_USAGES), &p, &next, &e));
	prov_aks_finish(&p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.v[0].max_nodes, 4);
	assert_int_equal(p.v[0].accel_per_node, 8);
	assert_int_equal(p.v[0].vcpus, 96);
	/* family left 288 cores, regional 700: 3 VMs x 8 GPUs */
	assert_int_equal(p.v[0].quota_left, 24);
	assert_true(p.v[1].spot);
	assert_int_equal(p.v[1].max_nodes, 3);
	assert_int_equal(p.v[1].quota_left, 1);	/* 28 low-priority cores / 24 */
	prov_pools_cleanup(&p);

	prov_pools_init(&p);
	assert_true(prov_aks_parse_agent_pools(AKS_POOLS, strlen(AKS_POOLS), &p, &next, &e));
	free(next);
	assert_true(prov_aks_parse_skus(restricted, strlen(restricted), "EastUS", &p, &next, &e));
	prov_aks_finish(&p);
	assert_int_equal(p.v[0].quota_left, 0);
	prov_pools_cleanup(&p);
}

static const char *SM_CLUSTER =
    "{\"ClusterArn\":\"arn:aws:sagemaker:us-east-1:123456789012:cluster/abc\","
    "\"ClusterName\":\"hp1\",\"ClusterStatus\":\"InService\",\"InstanceGroups\":["
    "{\"InstanceGroupName\":\"p5\",\"InstanceType\":\"ml.p5.48xlarge\",\"CurrentCount\":4,"
    "\"TargetCount\":6},{\"InstanceGroupName\":\"cpu\",\"InstanceType\":\"ml.m5.4xlarge\","
    "\"CurrentCount\":2,\"TargetCount\":2}]}";
static const char *SM_NODES1 =
    "{\"ClusterNodeSummaries\":[{\"InstanceGroupName\":\"p5\",\"InstanceId\":\"i-1\","
    "\"InstanceStatus\":{\"Status\":\"Running\"}},{\"InstanceGroupName\":\"p5\",\"InstanceId\":"
    "\"i-2\",\"InstanceStatus\":{\"Status\":\"Pending\"}}],\"NextToken\":\"t2\"}";
static const char *SM_NODES2 =
    "{\"ClusterNodeSummaries\":[{\"InstanceGroupName\":\"p5\",\"InstanceId\":\"i-3\","
    "\"InstanceStatus\":{\"Status\":\"Running\"}}]}";

static void
test_hyperpod(void **state)
{
	struct prov_pools p;
	struct prov_pool_job job = { 0 };
	struct err e = { 0 };
	char *next = NULL;

	(void)state;
	prov_pools_init(&p);
	job.out = &p;
	assert_true(prov_hyperpod_parse_nodes(SM_NODES1, strlen(SM_NODES1), &p, &next, &e));
	assert_string_equal(next, "t2");
	free(next);
	assert_true(prov_hyperpod_parse_nodes(SM_NODES2, strlen(SM_NODES2), &p, &next, &e));
	assert_null(next);
	assert_true(prov_hyperpod_parse_cluster(SM_CLUSTER, strlen(SM_CLUSTER), &p, &e));
	prov_hyperpod_ops.pools_finish(&job);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.v[0].machine_type, "ml.p5.48xlarge");
	assert_int_equal(p.v[0].nodes, 2);	/* running nodes listed */
	assert_int_equal(p.v[0].max_nodes, 6);
	assert_int_equal(p.v[1].nodes, 2);	/* none listed: DescribeCluster's count */
	assert_int_equal(p.v[0].quota_left, -1);
	prov_pools_cleanup(&p);
}

static void
test_bad_answers(void **state)
{
	static const char *const bad[] = {
		"", "null", "[]", "{", "{\"nodePools\":3}", "{\"nodePools\":[{\"name\":\"x\"}]}",
		"{\"nodePools\":[{\"name\":\"x\",\"config\":{\"machineType\":\"m\"},"
		"\"initialNodeCount\":-4}]}",
		"{\"value\":{}}", "{\"value\":[{\"name\":\"p\"}]}",
		"{\"InstanceGroups\":[{\"InstanceGroupName\":\"g\",\"InstanceType\":\"t\","
		"\"CurrentCount\":-1}]}", "{\"ClusterNodeSummaries\":{}}",
		"\xff\xfe", "{\"items\":null}",
	};
	struct prov_pools p;
	struct err e;
	char *next;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i]);
		int fails = 0;

		prov_pools_init(&p);
		next = NULL;
		memset(&e, 0, sizeof(e));
		fails += !prov_gke_parse_node_pools(bad[i], n, &p, &next, &e);
		free(next);
		fails += !prov_aks_parse_agent_pools(bad[i], n, &p, &next, &e);
		free(next);
		fails += !prov_hyperpod_parse_cluster(bad[i], n, &p, &e);
		fails += !prov_hyperpod_parse_nodes(bad[i], n, &p, &next, &e);
		free(next);
		/* each bad answer is refused by at least the parsers whose shape it breaks */
		assert_true(fails >= 2);
		assert_int_equal(e.status, 502);
		prov_pools_cleanup(&p);
	}
}

static const char *NODES =
    "{\"kind\":\"NodeList\",\"metadata\":{\"continue\":\"c1\"},\"items\":["
    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"cloud.google.com/gke-nodepool\":\"h100\","
    "\"cloud.google.com/gce-topology-subblock\":\"rack-a\"}},\"spec\":{},\"status\":{"
    "\"allocatable\":{\"cpu\":\"207500m\",\"memory\":\"1867417600Ki\",\"nvidia.com/gpu\":\"8\"},"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
    "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"cloud.google.com/gke-nodepool\":\"h100\","
    "\"cloud.google.com/gce-topology-subblock\":\"rack-b\"}},\"spec\":{\"unschedulable\":true},"
    "\"status\":{\"allocatable\":{\"cpu\":\"208\",\"memory\":\"1Ti\",\"nvidia.com/gpu\":\"8\"},"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}";
static const char *NODES2 =
    "{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"t1\",\"labels\":{"
    "\"cloud.google.com/gke-nodepool\":\"v5p\",\"cloud.google.com/gke-tpu-topology\":"
    "\"2x2x4\"}},\"status\":{\"allocatable\":{\"cpu\":\"208\",\"memory\":\"448Gi\","
    "\"google.com/tpu\":\"4\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}]}";
static const char *PODS =
    "{\"metadata\":{},\"items\":["
    "{\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"resources\":{\"requests\":{\"cpu\":"
    "\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"3\"}}},{\"resources\":{\"requests\":{"
    "\"cpu\":\"500m\"}}}],\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
    "\"status\":{\"phase\":\"Running\"}},"
    "{\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"resources\":{\"requests\":{"
    "\"nvidia.com/gpu\":\"5\"}}}]},\"status\":{\"phase\":\"Succeeded\"}},"
    "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\"}}}]},"
    "\"status\":{\"phase\":\"Pending\"}}]}";

static void
test_kube_capacity(void **state)
{
	struct kube_capacity c;
	struct err e = { 0 };
	char *next = NULL;

	(void)state;
	kube_capacity_init(&c, "cloud.google.com/gke-nodepool",
	    "cloud.google.com/gce-topology-subblock");
	assert_true(kube_parse_pods(PODS, strlen(PODS), &c, &next, &e));
	assert_null(next);
	assert_true(kube_parse_nodes(NODES, strlen(NODES), &c, &next, &e));
	assert_string_equal(next, "c1");
	free(next);
	assert_true(kube_parse_nodes(NODES2, strlen(NODES2), &c, &next, &e));
	kube_capacity_finish(&c);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.pods, 1);
	assert_string_equal(c.v[0].pool, "h100");
	assert_string_equal(c.v[0].rack, "rack-a");
	assert_true(c.v[0].ready);
	assert_int_equal(kube_free_accel(&c.v[0]), 5);
	assert_int_equal(kube_free_cpu(&c.v[0]), 207500 - 8000);	/* init container wins */
	assert_int_equal(kube_free_mem(&c.v[0]), 1867417600LL * 1024 - (16LL << 30));
	assert_false(c.v[1].ready);	/* cordoned */
	assert_int_equal(kube_free_accel(&c.v[1]), 8);
	assert_int_equal(c.v[1].alloc_mem, 1LL << 40);
	assert_string_equal(c.v[2].slice, "v5p");
	assert_string_equal(c.v[2].tpu_topology, "2x2x4");
	assert_int_equal(c.v[2].alloc_accel, 4);
	assert_false(c.v[2].ready);
	kube_capacity_cleanup(&c);
}

static void
test_quantities(void **state)
{
	static const struct { const char *s; bool milli; bool ok; long long v; } t[] = {
		{ "4", true, true, 4000 }, { "500m", true, true, 500 }, { "2.5", true, true, 2500 },
		{ "0", true, true, 0 }, { "0.0001", true, true, 1 }, { "16Gi", false, true,
		16LL << 30 }, { "1e3", false, true, 1000 }, { "129M", false, true, 129000000 },
		{ "123Mi", false, true, 123LL << 20 }, { "1.5Ki", false, true, 1536 },
		{ "100n", true, true, 1 }, { "", false, false, 0 }, { "-1", false, false, 0 },
		{ "Gi", false, false, 0 }, { "4Gx", false, false, 0 }, { "0x10", false, false, 0 },
		{ "nan", false, false, 0 }, { "inf", false, false, 0 }, { "1e30", false, false, 0 },
		{ "12 Gi", false, false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		long long v = -7;
		bool ok = kube_parse_quantity(t[i].s, t[i].milli, &v);

		if (ok != t[i].ok)
			fail_msg("quantity %s: ok %d", t[i].s, ok);
		if (ok && v != t[i].v)
			fail_msg("quantity %s: %lld != %lld", t[i].s, v, t[i].v);
	}
}

static void
test_kube_bad(void **state)
{
	static const char *const bad[] = {
		"{\"items\":[{\"metadata\":{}}]}",
		"{\"items\":[{\"metadata\":{\"name\":\"x\"},\"status\":{\"allocatable\":{\"cpu\":"
		"\"lots\"}}}]}",
		"{\"items\":{}}", "{}", "[1]",
	};
	struct kube_capacity c;
	struct err e;
	char *next;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kube_capacity_init(&c, "p", "r");
		memset(&e, 0, sizeof(e));
		assert_false(kube_parse_nodes(bad[i], strlen(bad[i]), &c, &next, &e));
		assert_null(next);
		assert_string_equal(e.code, "kube.bad_answer");
		kube_capacity_cleanup(&c);
	}
	kube_capacity_init(&c, "p", "r");
	{
		const char *neg = "{\"items\":[{\"spec\":{\"nodeName\":\"n\",\"containers\":"
		    "[{\"resources\":{\"requests\":{\"cpu\":\"-3\"}}}]}}]}";

		assert_false(kube_parse_pods(neg, strlen(neg), &c, &next, &e));
		assert_string_equal(e.code, "kube.bad_answer");
	}
	kube_capacity_cleanup(&c);
}

/* Every prefix of every good answer: no crash, no leak, and a cut answer never passes
 * as a whole one (it must fail, since JSON needs its closing brace). */
static void
test_truncated(void **state)
{
	const char *const bodies[] = { GKE_POOLS, GKE_POOLS2, GCE_REGION, GCE_RES, AKS_POOLS,
	    AKS_SKUS, AKS_USAGES, SM_CLUSTER, SM_NODES1, NODES, PODS };

	(void)state;
	for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		size_t n = strlen(bodies[b]);

		for (size_t cut = 0; cut < n; cut++) {
			struct prov_pools p;
			struct kube_capacity c;
			struct prov_creds cr;
			struct err e = { 0 };
			char *next = NULL, tag[64];
			int ok = 0;

			prov_pools_init(&p);
			kube_capacity_init(&c, "a", "b");
			ok += prov_gke_parse_node_pools(bodies[b], cut, &p, &next, &e);
			free(next);
			ok += prov_gke_parse_region(bodies[b], cut, &p, &e);
			ok += prov_gke_parse_reservations(bodies[b], cut, &p, &next, &e);
			free(next);
			ok += prov_aks_parse_agent_pools(bodies[b], cut, &p, &next, &e);
			free(next);
			ok += prov_aks_parse_skus(bodies[b], cut, "eastus", &p, &next, &e);
			free(next);
			ok += prov_aks_parse_usages(bodies[b], cut, &p, &next, &e);
			free(next);
			ok += prov_hyperpod_parse_cluster(bodies[b], cut, &p, &e);
			ok += prov_hyperpod_parse_nodes(bodies[b], cut, &p, &next, &e);
			free(next);
			ok += kube_parse_nodes(bodies[b], cut, &c, &next, &e);
			free(next);
			ok += kube_parse_pods(bodies[b], cut, &c, &next, &e);
			free(next);
			ok += prov_aws_parse_assume_role(bodies[b], cut, &cr, &e);
			ok += prov_parse_token(bodies[b], cut, &cr, &e);
			ok += prov_hyperpod_role_tag(bodies[b], cut, "k", tag, sizeof(tag));
			prov_gke_finish(&p);
			prov_aks_finish(&p);
			kube_capacity_finish(&c);
			assert_int_equal(ok, 0);
			prov_pools_cleanup(&p);
			kube_capacity_cleanup(&c);
		}
	}
}

static void
test_aws_xml(void **state)
{
	const char *ok = "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
	    "<AssumeRoleResult><Credentials><AccessKeyId>ASIAX</AccessKeyId><SecretAccessKey>sec"
	    "</SecretAccessKey><SessionToken>tok+/=</SessionToken><Expiration>2030-01-02T03:04:05Z"
	    "</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>";
	const char *role = "<GetRoleResponse><GetRoleResult><Role><RoleName>r</RoleName><Tags>"
	    "<member><Key>env</Key><Value>prod</Value></member><member><Key>fleet.io/cloud-id"
	    "</Key><Value>abc</Value></member></Tags></Role></GetRoleResult></GetRoleResponse>";
	struct prov_creds c;
	struct err e = { 0 };
	char v[64];

	(void)state;
	assert_true(prov_aws_parse_assume_role(ok, strlen(ok), &c, &e));
	assert_string_equal(c.access_key, "ASIAX");
	assert_string_equal(c.secret_key, "sec");
	assert_string_equal(c.session_token, "tok+/=");
	assert_true(c.expires == 1893553445.0);
	assert_false(prov_aws_parse_assume_role("<Error><Code>AccessDenied</Code></Error>", 40,
	    &c, &e));
	assert_true(prov_hyperpod_role_tag(role, strlen(role), "fleet.io/cloud-id", v,
	    sizeof(v)));
	assert_string_equal(v, "abc");
	assert_true(prov_hyperpod_role_tag(role, strlen(role), "env", v, sizeof(v)));
	assert_string_equal(v, "prod");
	assert_false(prov_hyperpod_role_tag(role, strlen(role), "missing", v, sizeof(v)));
}

static void
test_tokens(void **state)
{
	struct prov_creds c;
	struct err e = { 0 };
	const char *g = "{\"accessToken\":\"ya29.x\",\"expireTime\":\"2030-01-02T03:04:05Z\"}";
	const char *a = "{\"token_type\":\"Bearer\",\"expires_in\":\"3599\",\"access_token\":\"ey\"}";

	(void)state;
	assert_true(prov_parse_token(g, strlen(g), &c, &e));
	assert_string_equal(c.bearer, "ya29.x");
	assert_true(c.expires == 1893553445.0);
	assert_true(prov_parse_token(a, strlen(a), &c, &e));
	assert_string_equal(c.bearer, "ey");
	assert_true(c.expires > 1e9);
	assert_false(prov_parse_token("{\"access_token\":\"x\"}", 20, &c, &e));
	assert_false(prov_parse_token("{\"expires_in\":5}", 16, &c, &e));
}

static void
test_object_path(void **state)
{
	char p[256];

	(void)state;
	assert_true(kube_object_path("ray.io/v1", "RayJob", "team", "j1", p, sizeof(p)));
	assert_string_equal(p, "/apis/ray.io/v1/namespaces/team/rayjobs/j1");
	assert_true(kube_object_path("v1", "Namespace", NULL, "team", p, sizeof(p)));
	assert_string_equal(p, "/api/v1/namespaces/team");
	assert_true(kube_object_path("ray.io/v1", "RayCluster", "a", NULL, p, sizeof(p)));
	assert_string_equal(p, "/apis/ray.io/v1/namespaces/a/rayclusters");
	assert_true(kube_object_path("networking.k8s.io/v1", "NetworkPolicy", "a", "x", p,
	    sizeof(p)));
	assert_string_equal(p, "/apis/networking.k8s.io/v1/namespaces/a/networkpolicies/x");
	assert_false(kube_object_path("v1", "Ray/Job", "a", "b", p, sizeof(p)));
	assert_false(kube_object_path(NULL, "RayJob", "a", "b", p, sizeof(p)));
}

static void
test_aws_sign(void **state)
{
	struct prov_aws_sig s;
	struct err e = { 0 };
	bool auth = false, tok = false, host = false;

	(void)state;
	assert_true(prov_aws_sign("POST", "http://127.0.0.1:8123/aws/sagemaker", "us-east-1",
	    "sagemaker", "ASIA1", "secret", "session", "application/x-amz-json-1.1",
	    "SageMaker.DescribeCluster", "{}", &s, &e));
	for (size_t i = 0; i < s.n; i++) {
		if (strcmp(s.h[i].name, "authorization") == 0)
			auth = strstr(s.h[i].value, "Credential=ASIA1/") != NULL &&
			    strstr(s.h[i].value, "/us-east-1/sagemaker/aws4_request") != NULL &&
			    strstr(s.h[i].value, "x-amz-security-token;x-amz-target") != NULL;
		if (strcmp(s.h[i].name, "x-amz-security-token") == 0)
			tok = strcmp(s.h[i].value, "session") == 0;
		if (strcmp(s.h[i].name, "host") == 0)
			host = strcmp(s.h[i].value, "127.0.0.1:8123") == 0;
	}
	assert_true(auth && tok && host);
	assert_false(prov_aws_sign("POST", "not a url", "r", "s", "a", "b", NULL, NULL, NULL,
	    "", &s, &e));
}

static void
test_ops(void **state)
{
	(void)state;
	assert_ptr_equal(prov_ops_get("gke"), &prov_gke_ops);
	assert_ptr_equal(prov_ops_get("aks"), &prov_aks_ops);
	assert_ptr_equal(prov_ops_get("hyperpod"), &prov_hyperpod_ops);
	assert_null(prov_ops_get("eks"));
	assert_null(prov_ops_get(NULL));
}

/* An API server that pages forever is cut off; a truncated answer is an error. */
static void
test_kube_endless_and_truncated(void **state)
{
	struct fake f;
	struct kube_capacity c;
	struct prov_cluster k = { "id", "c", NULL, NULL, "tok", NULL, NULL };
	struct err e = { 0 };
	char url[64];

	(void)state;
	fake_start(&f, "{\"items\":[],\"metadata\":{\"continue\":\"again\"}}");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/k", f.port);
	k.api_server = url;
	kube_capacity_init(&c, "p", "r");
	assert_false(kube_capacity_get(&k, &c, &e));
	assert_string_equal(e.code, "kube.paging");
	assert_true(f.served >= 100 && f.served <= 102);
	kube_capacity_cleanup(&c);
	fake_stop(&f);

	fake_start(&f, "{\"items\":[{\"metadata\":{\"name\":\"n1\"");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/k", f.port);
	kube_capacity_init(&c, "p", "r");
	memset(&e, 0, sizeof(e));
	assert_false(kube_capacity_get(&k, &c, &e));
	assert_string_equal(e.code, "kube.bad_answer");
	kube_capacity_cleanup(&c);
	fake_stop(&f);
}

/* Capacity types (issue 27) as each provider's pool resource states them. */
static void
test_capacity_types(void **state)
{
	static const char gke[] = "{\"nodePools\":[{\"name\":\"dws\",\"config\":{\"machineType\":"
	    "\"a3-highgpu-8g\"},\"initialNodeCount\":0,\"queuedProvisioning\":{\"enabled\":true}},"
	    "{\"name\":\"res\",\"config\":{\"machineType\":\"a3-highgpu-8g\",\"reservationAffinity\":"
	    "{\"consumeReservationType\":\"SPECIFIC_RESERVATION\",\"key\":"
	    "\"compute.googleapis.com/reservation-name\",\"values\":[\"r1\"]}},\"initialNodeCount\":1},"
	    "{\"name\":\"any\",\"config\":{\"machineType\":\"a3-highgpu-8g\",\"reservationAffinity\":"
	    "{\"consumeReservationType\":\"ANY_RESERVATION\"}},\"initialNodeCount\":1}]}";
	static const char aks[] = "{\"value\":[{\"name\":\"crg\",\"properties\":{\"vmSize\":"
	    "\"Standard_ND96isr_H100_v5\",\"count\":1,\"capacityReservationGroupID\":\"/subscriptions/s"
	    "/resourceGroups/g/providers/Microsoft.Compute/capacityReservationGroups/c\"}},"
	    "{\"name\":\"od\",\"properties\":{\"vmSize\":\"Standard_ND96isr_H100_v5\",\"count\":1}}]}";
	struct prov_pools p;
	struct err e = { 0 };
	char *next = NULL;

	(void)state;
	prov_pools_init(&p);
	assert_true(prov_gke_parse_node_pools(gke, strlen(gke), &p, &next, &e));
	free(next);
	assert_string_equal(prov_pools_find(&p, "dws")->capacity_type, "flex_start");
	assert_string_equal(prov_pools_find(&p, "res")->capacity_type, "reservation");
	assert_string_equal(prov_pools_find(&p, "any")->capacity_type, "");	/* on demand */
	prov_pools_cleanup(&p);
	prov_pools_init(&p);
	assert_true(prov_aks_parse_agent_pools(aks, strlen(aks), &p, &next, &e));
	free(next);
	assert_string_equal(prov_pools_find(&p, "crg")->capacity_type, "reservation");
	assert_string_equal(prov_pools_find(&p, "od")->capacity_type, "");
	prov_pools_cleanup(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gke),
		cmocka_unit_test(test_aks),
		cmocka_unit_test(test_hyperpod),
		cmocka_unit_test(test_bad_answers),
		cmocka_unit_test(test_kube_capacity),
		cmocka_unit_test(test_quantities),
		cmocka_unit_test(test_kube_bad),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_aws_xml),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_object_path),
		cmocka_unit_test(test_aws_sign),
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_kube_endless_and_truncated),
		cmocka_unit_test(test_capacity_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
