/* fleetd: placeholder main until the server lands. */
int
main(void)
{
	return 0;
}
