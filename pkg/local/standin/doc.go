// Package standin keeps a Deployment in the local stack that stands for
// the controller, for tools written against a controller that runs as a
// Deployment (the peer's end-to-end suites read and patch
// kube-system/karpenter's env, wait for its rollout and for its pod to
// hold the leader-election Lease). It is the `controller-deployment`
// Component of `dovetail local up --controller-deployment NS/NAME`.
//
//	Start: the stack's tainted system Node (local.SystemNode; kwok plays its kubelet)
//	     ─▶ the Deployment NS/NAME: one replica, pods labelled
//	        app.kubernetes.io/instance=NAME, container "controller" whose
//	        env is the controller's FEATURE_GATES / AWS_FEATURE_GATES
//	     ─▶ a loop (every Poll) that
//	          - restarts the controller processes (ctrlproc.Reconfigure)
//	            with the template's literal env whenever the pod template
//	            changes (kubectl set env, kubectl rollout restart), as a
//	            real rollout would; a variable removed from the template
//	            is set empty, which the controller reads as its default;
//	          - once the controller runs the current template, writes the
//	            Lease NS/NAME-leader-election naming the newest ready pod
//	            ("<pod>_<random>", the form leader election uses)
//	Stop:  the loop ends; the objects stay with the cluster.
//
// What it is not: the controller does not run in the Deployment's pods
// (kwok only pretends to run them), and the Lease is written by the stand-in
// on the controller's behalf, not won by it. Env given with valueFrom is not
// mirrored (a progress line says so). The controller's own leader election
// keeps its own Lease.
//
// It must not import the controllers or the cloud; it talks to the stack
// through client-go and to the controller through package ctrlproc.
package standin
