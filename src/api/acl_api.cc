// Placeholder: the acl C API lands here.
