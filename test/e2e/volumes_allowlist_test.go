//go:build e2e

package e2e

// Issue 43, finding 2: volumes were a denylist. With a CSIDriver that allows ephemeral use (as
// csi-driver-nfs ships), a restricted tenant's pod mounted any NFS export the node reaches through a CSI
// inline volume, the exposure the volumeName rule had closed; image volumes were admitted too (pulled with
// the node's credentials). Now a pod's volumes are an allowlist (configMap, secret, downwardAPI, emptyDir
// with a size limit, projected without tokens or pod certificates, claims within the claim rules), and CSI
// inline and image volumes only where the provider allowed them (namespace annotations set from
// --csi-drivers and --image-volumes).

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// What the volume rules say when they refuse.
const (
	byVolumeType     = "this volume type is not allowed"
	byCSIDriver      = "CSI inline volumes are allowed only"
	byImageVolume    = "image volumes are allowed only"
	byEmptyDirLimit  = "an emptyDir volume must set sizeLimit"
	byPodCertificate = "must not mount a pod certificate"
	nfsDriver        = "nfs.csi.k8s.io"
	annCSIDrivers    = "federate.dev/allowed-csi-drivers"
	annImageVolumes  = "federate.dev/allowed-image-volumes"
)

func withVolume(v corev1.VolumeSource) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: v})
	}
}

func csiVolume(driver string) corev1.VolumeSource {
	return corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver,
		VolumeAttributes: map[string]string{"server": "nfs.provider.internal", "share": "/exports/provider-data"}}}
}

func imageVolume(ref string) corev1.VolumeSource {
	return corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: ref, PullPolicy: corev1.PullIfNotPresent}}
}

func podCertificateVolume() corev1.VolumeSource {
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
		SignerName: "example.com/tenant-signer", KeyType: "ED25519", CredentialBundlePath: "credentialbundle.pem"}}}}}
}

// csiDriverAllowingEphemeral makes, as the administrator, the CSIDriver object csi-driver-nfs installs: it
// declares inline (ephemeral) use. It returns its removal.
func csiDriverAllowingEphemeral(t *testing.T, admin kubernetes.Interface) func() {
	t.Helper()
	_, err := admin.StorageV1().CSIDrivers().Create(t.Context(), &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: nfsDriver},
		Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
		metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return func() {
		_ = admin.StorageV1().CSIDrivers().Delete(context.Background(), nfsDriver, metav1.DeleteOptions{})
	}
}

func TestSandboxVolumesAllowlist(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	defer csiDriverAllowingEphemeral(t, admin)()
	tenant := func() kubernetes.Interface {
		_, cfg := issuedConfig(t)
		return kubernetes.NewForConfigOrDie(unlimited(cfg))
	}
	as := tenant()
	runAttacks := func(t *testing.T, as kubernetes.Interface, attacks []attack) {
		t.Helper()
		for _, a := range attacks {
			err := a.try(ctx, as)
			if err == nil || !refused(err) || !containsAny(err.Error(), a.want) {
				t.Errorf("%s: err = %v, want refused by %v", a.name, err, a.want)
			}
			if err := a.intact(ctx, admin); err != nil {
				t.Errorf("%s: %v", a.name, err)
			}
		}
	}

	// Restricted, nothing allowed: a CSI inline volume of a driver that allows it, an image volume, an
	// emptyDir without a size limit and a pod certificate are refused by the pods policy.
	runAttacks(t, as, []attack{
		podAttack("csi-nfs", withVolume(csiVolume(nfsDriver)), byCSIDriver),
		podAttack("image", withVolume(imageVolume(pauseImage)), byImageVolume),
		podAttack("emptydir-unbounded", withVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}), byEmptyDirLimit),
		podAttack("pod-certificate", withVolume(podCertificateVolume()), byPodCertificate),
	})
	// Through a Deployment: its template is refused for the tenant, and so no controller makes a pod.
	labels := map[string]string{"app": "csi-deploy"}
	spec := restrictedPodSpec()
	spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: csiVolume(nfsDriver)}}
	_, err := as.AppsV1().Deployments(tenantNS).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "csi-deploy"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}},
		metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), byCSIDriver) {
		t.Errorf("a Deployment with a CSI inline volume: err = %v, want refused (%s)", err, byCSIDriver)
		waitCount(t, dyn(t, provider), podsGVR, tenantNS, func(n int) bool { return n > 0 }, 10*time.Second)
	}
	if pods, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: "app=csi-deploy"}); err != nil || len(pods.Items) > 0 {
		t.Errorf("pods with the CSI inline volume exist: %d (%v)", len(pods.Items), err)
	}

	// What the allowlist admits.
	class := allowedClass
	allowed := restrictedPod("allowed-volumes", func(p *corev1.Pod) {
		limit := resource.MustParse("64Mi")
		p.Spec.Volumes = []corev1.Volume{
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}},
			{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}}}},
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}}},
			{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}},
		}
	})
	if _, err := as.CoreV1().Pods(tenantNS).Create(ctx, allowed, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a pod with only allowed volumes: %v", err)
	}

	// Baseline admits what restricted's Pod Security refuses first: the allowlist refuses it.
	authenticate(t, "--pod-security", "baseline")
	as = tenant()
	runAttacks(t, as, []attack{
		podAttack("nfs", withVolume(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.provider.internal", Path: "/exports/provider-data"}}), byVolumeType),
		podAttack("iscsi", withVolume(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "192.0.2.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0}}), byVolumeType),
		podAttack("cephfs", withVolume(corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"192.0.2.2:6789"}}}), byVolumeType),
		podAttack("csi-baseline", withVolume(csiVolume(nfsDriver)), byCSIDriver),
	})

	// The provider allows the NFS driver's inline volumes and images from registry.k8s.io; a renewal
	// without the flags keeps them; given empty, they are gone.
	authenticate(t, "--pod-security", "restricted", "--csi-drivers", nfsDriver, "--image-volumes", "registry.k8s.io/")
	as = tenant()
	ns, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{})
	if err != nil || ns.Annotations[annCSIDrivers] != nfsDriver || ns.Annotations[annImageVolumes] != "registry.k8s.io/" {
		t.Errorf("the sandbox's annotations: %v (%v)", ns.Annotations, err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, ok := range []*corev1.Pod{
		restrictedPod("csi-allowed", withVolume(csiVolume(nfsDriver))),
		restrictedPod("image-allowed", withVolume(imageVolume(pauseImage))),
	} {
		eventually(t, ok.Name+" admitted once allowed", func() error {
			_, err := as.CoreV1().Pods(tenantNS).Create(ctx, ok, dry)
			return err
		})
	}
	runAttacks(t, as, []attack{
		podAttack("csi-other-driver", withVolume(csiVolume("smb.csi.k8s.io")), byCSIDriver),
		podAttack("image-other-registry", withVolume(imageVolume("docker.io/library/busybox:1.36")), byImageVolume),
		podAttack("image-lookalike-registry", withVolume(imageVolume("registry.k8s.io.evil.example/pause:3.10")), byImageVolume),
	})
	authenticate(t)
	if ns, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{}); err != nil || ns.Annotations[annCSIDrivers] != nfsDriver {
		t.Errorf("a renewal without --csi-drivers dropped the recorded list: %v (%v)", ns.Annotations, err)
	}
	authenticate(t, "--csi-drivers=", "--image-volumes=")
	as = tenant()
	eventually(t, "a CSI inline volume refused again once the list is emptied", func() error {
		_, err := as.CoreV1().Pods(tenantNS).Create(ctx, restrictedPod("csi-again", withVolume(csiVolume(nfsDriver))), dry)
		return refusedBy(err, byCSIDriver)
	})
}
