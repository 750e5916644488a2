/*
 * device.h - what the examples share for --device NAME: finding the device
 * (loading the build's plugin for a name no plugin has registered yet) and
 * moving a leaf tensor there.
 *
 * Example code, not libdispatch's API. Not thread-safe (plugin loading).
 */
#ifndef EXAMPLES_DEVICE_H
#define EXAMPLES_DEVICE_H

#include <disp.h>

/* example_find_device - the device `name` names ("cpu", "openreg:0", ...);
 * a plain name no loaded plugin has registered ("openreg") first loads
 * lib<name>.so from the build's lib/ beside this program's bin/
 * (DISP_PLUGINS works too). A device without an index gets index 0.
 * Errors: disp_device_parse's (the name is unknown). */
disp_status example_find_device(const char *name, disp_device *out);

/* example_to_device - *t replaced by its copy on dev, made outside
 * autograd: a new leaf requiring grad as *t did (parameters, constants and
 * batches have no history to keep); nothing happens when *t is there
 * already. Errors: the copy's; *t is then unchanged. */
disp_status example_to_device(disp_tensor **t, disp_device dev);

#endif
