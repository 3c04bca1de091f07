// Package launchtemplate builds EC2 launch templates from their content and
// names them by a hash of it, so identical content is one template reused
// by every launch and changed content gets a new one.
//
// Name is "dovetail/<cluster>/<hash>", at most 126 characters (EC2 allows
// 128). Provider.Ensure looks a name up with DescribeLaunchTemplates before
// creating it, remembers what exists, and survives a concurrent creator
// (AlreadyExists is answered by looking the template up again).
//
// See ExampleContent_Name.
package launchtemplate
