/* placeholder: being written */
typedef int bc__placeholder_mem;
