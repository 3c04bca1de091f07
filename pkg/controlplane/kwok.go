package controlplane

// HoldConditionsLabel=HoldConditionsValue on a Node keeps kwok from
// rewriting its status conditions (see kwokStages): how tests and the
// local stack inject node faults for node repair. On a Pod it keeps the
// pod from becoming Ready.
const (
	HoldConditionsLabel = "kwok.x-k8s.io/stage"
	HoldConditionsValue = "unhealthy"
)

// PodDeleteDelayAnnotation on a Pod (a duration such as "60s", the peer's
// kwok annotation) stands for a preStop hook: the deleted pod is removed
// after that delay, or when its grace period ends if that is sooner.
const PodDeleteDelayAnnotation = "pod-delete.stage.kwok.x-k8s.io/delay"

// kwokStages is the Stage configuration handed to kwok (--config). kwok
// refuses to start without stages; these make it behave like a fast,
// healthy kubelet on every Node it manages:
//
//   - node-up: a Node whose Ready condition is not True gets the usual
//     conditions (Ready, no pressure), addresses, node info, and a large
//     default capacity/allocatable when the Node declares none.
//   - node-heartbeat: refreshes the conditions of a Ready Node every few
//     minutes. Liveness itself comes from the node Lease that kwok renews
//     (--node-lease-duration-seconds), as a real kubelet does.
//   - node-hold-conditions: a Node labelled HoldConditionsLabel (the
//     peer's kwok label kwok.x-k8s.io/stage=unhealthy) is left alone: it
//     outweighs node-up and node-heartbeat, so conditions a test writes
//     into its status (Ready=False, AcceleratedHardwareReady=False, ...)
//     stay until the test changes them or removes the label. Its Lease is
//     still renewed.
//   - pod-run: a Pending pod bound to a managed Node starts at once: all
//     containers running and ready, IPs assigned, phase Running.
//   - pod-succeed: a running pod owned by a Job completes (phase Succeeded),
//     so Jobs finish.
//   - pod-remove: a pod with a deletion timestamp is removed for good, as
//     the kubelet does once its containers have stopped.
//   - pod-remove-after-prestop: a pod with a deletion timestamp and the
//     annotation PodDeleteDelayAnnotation (the peer's test pods carry it with
//     their preStop sleep, e.g. "60s") is removed when that delay or its
//     grace period (the deletion timestamp) ends, whichever comes first, as
//     a kubelet stops a container whose preStop hook outlasts the grace
//     period (the peer's kwok waits for the annotation's delay alone).
//     When the grace period is the longer, the removal falls between the two
//     (kwok's jitter).
//   - pod-unready: a pod labelled HoldConditionsLabel=HoldConditionsValue
//     runs but never becomes Ready (the peer's pod-unhealthy stage: its
//     readiness probe never passes), so a PodDisruptionBudget over it stays
//     unhealthy.
//
// The template functions (Now, NodeConditions, NodeIP, NodeName, NodePort,
// NodeIPsWith, PodIPsWith, Quote, YAML, Version) are kwok's.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-hold-conditions
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchLabels:
      ` + HoldConditionsLabel + `: ` + HoldConditionsValue + `
  weight: 100
  next: {}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-up
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $since := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $since | Quote }}
      {{ end }}
      {{ if not .status.addresses }}
      addresses:
      {{ with NodeIP }}
      - type: InternalIP
        address: {{ . | Quote }}
      {{ end }}
      {{ with NodeName }}
      - type: Hostname
        address: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}
      {{ $info := .status.nodeInfo }}
      {{ $fake := printf "kwok-%s" Version }}
      nodeInfo:
        architecture: {{ or $info.architecture "amd64" }}
        operatingSystem: {{ or $info.operatingSystem "linux" }}
        kubeletVersion: {{ or $info.kubeletVersion $fake }}
        kubeProxyVersion: {{ or $info.kubeProxyVersion $fake }}
        containerRuntimeVersion: {{ or $info.containerRuntimeVersion $fake }}
        kernelVersion: {{ or $info.kernelVersion $fake }}
        osImage: {{ or $info.osImage $fake }}
        bootID: {{ or $info.bootID "" | Quote }}
        machineID: {{ or $info.machineID "" | Quote }}
        systemUUID: {{ or $info.systemUUID "" | Quote }}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: In
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
  delay:
    durationMilliseconds: 240000
    jitterDurationMilliseconds: 300000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $since := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $since | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-run
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      conditions:
      {{ range (list "PodReadyToStartContainers" "Initialized" "ContainersReady" "Ready") }}
      - type: {{ . }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
` + podAddresses + `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-succeed
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ['Running']
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: ['Job']
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Succeeded
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-remove
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-remove-after-prestop
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
    - key: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'
      operator: Exists
  weight: 100
  delay:
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'
    jitterDurationFrom:
      expressionFrom: '.metadata.deletionTimestamp'
  next:
    delete: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-unready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchLabels:
      kwok.x-k8s.io/stage: unhealthy
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ['Pending']
  weight: 100
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      conditions:
      - type: PodReadyToStartContainers
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "False"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "False"
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
` + podAddresses

// schedulerConfig is kube-scheduler's configuration: no leader election
// (there is one scheduler) and a client fast enough for large scenarios.
// %s is the kubeconfig path.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`

// podAddresses is the status template fragment (inside a stage's
// statusTemplate) that gives a starting pod its host and pod IPs.
const podAddresses = `      {{ with NodeIPsWith .spec.nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
`
