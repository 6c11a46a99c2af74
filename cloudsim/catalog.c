/* cloudsim catalog: the machine types the emulated clouds sell, with their real shapes,
 * and the quota names each cloud counts them under. */
#include <string.h>

#include "cloudsim/cs.h"

static const struct cs_machine machines[] = {
	{ "a3-highgpu-8g", CS_GKE, 208, 1872, "nvidia-h100-80gb", 8, false },
	{ "a3-megagpu-8g", CS_GKE, 208, 1872, "nvidia-h100-mega-80gb", 8, false },
	{ "a2-ultragpu-8g", CS_GKE, 96, 1360, "nvidia-a100-80gb", 8, false },
	{ "a2-highgpu-8g", CS_GKE, 96, 680, "nvidia-tesla-a100", 8, false },
	{ "g2-standard-48", CS_GKE, 48, 192, "nvidia-l4", 4, false },
	{ "g2-standard-24", CS_GKE, 24, 96, "nvidia-l4", 2, false },
	{ "ct5p-hightpu-4t", CS_GKE, 208, 448, "tpu-v5p-slice", 4, true },
	{ "n2-standard-32", CS_GKE, 32, 128, NULL, 0, false },
	{ "e2-standard-8", CS_GKE, 8, 32, NULL, 0, false },
	{ "Standard_ND96isr_H100_v5", CS_AKS, 96, 1900, "nvidia-h100-80gb", 8, false },
	{ "Standard_ND96amsr_A100_v4", CS_AKS, 96, 1900, "nvidia-a100-80gb", 8, false },
	{ "Standard_NC24ads_A100_v4", CS_AKS, 24, 220, "nvidia-a100-80gb", 1, false },
	{ "Standard_D16s_v5", CS_AKS, 16, 64, NULL, 0, false },
	{ "Standard_D8s_v5", CS_AKS, 8, 32, NULL, 0, false },
	{ "ml.p5.48xlarge", CS_HYPERPOD, 192, 2048, "nvidia-h100-80gb", 8, false },
	{ "ml.p4de.24xlarge", CS_HYPERPOD, 96, 1152, "nvidia-a100-80gb", 8, false },
	{ "ml.p4d.24xlarge", CS_HYPERPOD, 96, 1152, "nvidia-a100-40gb", 8, false },
	{ "ml.g6.48xlarge", CS_HYPERPOD, 192, 768, "nvidia-l4", 8, false },
	{ "ml.m5.4xlarge", CS_HYPERPOD, 16, 64, NULL, 0, false },
	{ "ml.m5.8xlarge", CS_HYPERPOD, 32, 128, NULL, 0, false },
	/* the current generations (fleetd ships them as built-in flavors, regions/catalog.c) */
	{ "a3-ultragpu-8g", CS_GKE, 224, 2952, "nvidia-h200-141gb", 8, false },
	{ "a4-highgpu-8g", CS_GKE, 224, 3968, "nvidia-b200", 8, false },
	{ "a4x-highgpu-4g", CS_GKE, 140, 884, "nvidia-gb200", 4, false },
	{ "ct6e-standard-4t", CS_GKE, 180, 720, "tpu-v6e-slice", 4, true },
	{ "ct5lp-hightpu-4t", CS_GKE, 112, 192, "tpu-v5-lite-podslice", 4, true },
	{ "tpu7x-standard-4t", CS_GKE, 224, 960, "tpu7x", 4, true },
	{ "Standard_ND96isr_H200_v5", CS_AKS, 96, 1850, "nvidia-h200-141gb", 8, false },
	{ "Standard_ND128isr_NDR_GB200_v6", CS_AKS, 128, 864, "nvidia-gb200", 4, false },
	{ "ml.p5en.48xlarge", CS_HYPERPOD, 192, 2048, "nvidia-h200-141gb", 8, false },
	{ "ml.p6-b200.48xlarge", CS_HYPERPOD, 192, 2048, "nvidia-b200", 8, false },
	{ "ml.p6e-gb200.36xlarge", CS_HYPERPOD, 144, 960, "nvidia-gb200", 4, false },
	/* sold by the emulated cloud but not shipped in fleetd's catalog: an admin adds its
	 * flavor at run time (tests/integration/test_flavors.c) */
	{ "ml.p6-b300.48xlarge", CS_HYPERPOD, 192, 4096, "nvidia-b300", 8, false },
};

const struct cs_machine *
cs_machine_find(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < sizeof(machines) / sizeof(machines[0]); i++)
		if (strcmp(machines[i].name, name) == 0)
			return &machines[i];
	return NULL;
}

/* Compute Engine regional quota metric for an accelerator. */
const char *
cs_gce_accel_quota_metric(const char *accel, bool spot)
{
	static const struct { const char *accel, *od, *spot; } m[] = {
		{ "nvidia-h100-80gb", "NVIDIA_H100_GPUS", "PREEMPTIBLE_NVIDIA_H100_GPUS" },
		{ "nvidia-h100-mega-80gb", "NVIDIA_H100_MEGA_GPUS",
		    "PREEMPTIBLE_NVIDIA_H100_MEGA_GPUS" },
		{ "nvidia-a100-80gb", "NVIDIA_A100_80GB_GPUS", "PREEMPTIBLE_NVIDIA_A100_80GB_GPUS" },
		{ "nvidia-tesla-a100", "NVIDIA_A100_GPUS", "PREEMPTIBLE_NVIDIA_A100_GPUS" },
		{ "nvidia-l4", "NVIDIA_L4_GPUS", "PREEMPTIBLE_NVIDIA_L4_GPUS" },
		{ "tpu-v5p-slice", "TPU_V5P_PODSLICE_CHIPS", "PREEMPTIBLE_TPU_V5P_PODSLICE_CHIPS" },
	};
	size_t i;

	for (i = 0; accel != NULL && i < sizeof(m) / sizeof(m[0]); i++)
		if (strcmp(m[i].accel, accel) == 0)
			return spot ? m[i].spot : m[i].od;
	return NULL;
}

/* Azure vCPU quota family of a VM size (usages name.value). */
const char *
cs_azure_family(const char *vm_size)
{
	if (vm_size == NULL)
		return "standardDSv5Family";
	if (strstr(vm_size, "H100_v5") != NULL)
		return "standardNDSH100v5Family";
	if (strstr(vm_size, "ND96amsr_A100_v4") != NULL)
		return "standardNDAMSv4_A100Family";
	if (strstr(vm_size, "NC24ads_A100_v4") != NULL)
		return "StandardNCADSA100v4Family";
	return "standardDSv5Family";
}

/* The i-th machine type of the catalog, NULL past the end. */
const struct cs_machine *
cs_machine_at(size_t i)
{
	return i < sizeof(machines) / sizeof(machines[0]) ? &machines[i] : NULL;
}
