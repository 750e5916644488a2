/* disp_safetensors.h - `disp safetensors FILE`: list a checkpoint's tensors. */
#ifndef DISP_TOOL_SAFETENSORS_H
#define DISP_TOOL_SAFETENSORS_H

/* argv: the command's arguments (after "safetensors"). Exit code: 0 when
 * the file loads (its listing on stdout), 1 when it does not (the reason
 * on stderr), 2 for a usage error. */
int disp_tool_safetensors(int argc, char **argv);

#endif
