// Package nodeclass resolves an EC2NodeClass against AWS: its selector
// terms become concrete subnets, security groups and images, its role
// becomes an instance profile, and the outcome becomes the class's status
// and conditions. It also defines the class's static-field hash, which
// drift compares.
//
// The EC2NodeClass controller calls Resolver.Resolve on every reconcile and
// writes the returned status; the provider then reads that status to
// launch, so a launch never resolves selectors itself.
//
// # Resolution rules
//
//   - Subnets and security groups: each term is one Describe call with the
//     term's filters (tags, with "*" meaning any value; id; name); the
//     union of all terms is the result, sorted by id.
//   - Images: an alias term (family@version) reads the EKS or Bottlerocket
//     SSM parameters of that family and version for amd64 and arm64; id,
//     tags, name and owner terms become one DescribeImages call each;
//     ssmParameter terms read the named parameter. Of all matches, the
//     newest (creation date, then name, then id) of each architecture
//     wins; status.amis lists the winners, amd64 first, each with its
//     kubernetes.io/arch requirement.
//   - Instance profile: spec.instanceProfile is checked to exist and used
//     as given; spec.role gets a profile named InstanceProfileName(cluster,
//     region, class), created and tagged with the cluster, region and
//     class when missing, with its role replaced when the role changed.
//
// # Conditions
//
// SubnetsReady, SecurityGroupsReady, AMIsReady and InstanceProfileReady
// are True with reason "Resolved", or False with reasons SubnetsNotFound,
// SecurityGroupsNotFound, AMINotFound, InstanceProfileNotFound and a
// message naming the selector terms that matched nothing. Ready follows.
// API failures are returned as errors (callers requeue) and leave
// conditions untouched.
//
// # Hash
//
// Hash covers the fields that change how an instance is built but are not
// selectors: amiFamily, userData, role, instanceProfile, tags, kubelet,
// blockDeviceMappings, instanceStorePolicy, detailedMonitoring,
// associatePublicIPAddress, metadataOptions, context. Selector changes are
// caught by comparing an instance with status instead. HashVersion
// versions the scheme: a NodeClaim whose hash-version annotation differs
// is not judged by hash.
package nodeclass
